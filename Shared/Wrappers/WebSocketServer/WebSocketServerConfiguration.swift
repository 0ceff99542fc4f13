/// Settings of a ``WebSocketServer``. Every limit is per connection.
public struct WebSocketServerConfiguration: Sendable {
    /// Address to listen on: an IPv4/IPv6 literal or interface name; `nil` or `0.0.0.0` means every address.
    public var host: String?
    /// TCP port; `0` picks an ephemeral port, readable from ``WebSocketServer/port`` after `start()`.
    public var port: Int
    /// The only path on which WebSocket upgrades are accepted, e.g. `/realtime/v1/websocket`.
    public var path: String
    /// Outgoing messages a connection may have waiting before ``WebSocketConnection/send(_:)`` reports overflow.
    public var maxQueuedMessages: Int
    /// Outgoing bytes a connection may have waiting before ``WebSocketConnection/send(_:)`` reports overflow.
    public var maxQueuedBytes: Int
    /// Largest inbound message (after reassembling fragments); bigger ones close the socket with 1009.
    public var maxMessageBytes: Int
    /// Seconds without proof of life after which the server sends a WebSocket PING (lws validity policy).
    public var pingInterval: Int
    /// Seconds without proof of life after which the TCP connection is dropped.
    public var idleTimeout: Int
    /// Largest HTTP request body accepted on the plain HTTP side; bigger ones get 413.
    public var maxHTTPBodyBytes: Int
    /// Seconds an HTTP request may wait for the router before lws drops it.
    public var httpResponseTimeout: Int
    /// Seconds `shutdown()` waits for close handshakes before destroying the context.
    public var shutdownGracePeriod: Double
    /// How the service thread waits for socket events.
    public var eventLoop: EventLoop
    /// Most bytes of a connection's queued frames written together with one `send()`;
    /// `0` writes every frame on its own (one `send()` per message).
    public var coalescedWriteBytes = 16 * 1024

    public enum EventLoop: Sendable, Equatable {
        /// epoll (lws's libev plugin, `libwebsockets-evlib-ev`, on a loop the server owns)
        /// when the host has it, otherwise `.poll`. The cost of a wake-up then grows with the
        /// sockets that are ready, not with every open socket.
        case automatic
        /// lws's built-in `poll()` loop over every socket.
        case poll
    }

    public init(host: String? = "0.0.0.0", port: Int = 8084, path: String = "/realtime/v1/websocket",
                maxQueuedMessages: Int = 1_024, maxQueuedBytes: Int = 8 << 20, maxMessageBytes: Int = 1 << 20,
                pingInterval: Int = 30, idleTimeout: Int = 75, maxHTTPBodyBytes: Int = 1 << 20,
                httpResponseTimeout: Int = 30, shutdownGracePeriod: Double = 2, eventLoop: EventLoop = .automatic) {
        self.host = host
        self.port = port
        self.path = path
        self.maxQueuedMessages = maxQueuedMessages
        self.maxQueuedBytes = maxQueuedBytes
        self.maxMessageBytes = maxMessageBytes
        self.pingInterval = pingInterval
        self.idleTimeout = idleTimeout
        self.maxHTTPBodyBytes = maxHTTPBodyBytes
        self.httpResponseTimeout = httpResponseTimeout
        self.shutdownGracePeriod = shutdownGracePeriod
        self.eventLoop = eventLoop
    }
}
