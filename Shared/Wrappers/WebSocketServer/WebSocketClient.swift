import Foundation
import ServiceLogging
import Synchronization

/// A WebSocket client over libwebsockets' client mode (plain `ws://`, one connection).
///
/// It keeps the server's discipline: one dedicated service thread owns the lws context and the
/// connection — it connects, handshakes, reads, writes and closes — and other threads only
/// queue outgoing messages and wake it through a ``ServiceWaker`` (`lws_cancel_service`).
/// Incoming text messages (fragments reassembled) arrive on ``messages``, a bounded stream that
/// finishes when the connection closes.
///
/// ```swift
/// let client = try await WebSocketClient.connect(to: "ws://127.0.0.1:8084/realtime/v1/websocket?vsn=1.0.0",
///                                                headers: ["x-api-key": token], logger: logger)
/// client.send(#"{"topic":"phoenix","event":"heartbeat","payload":{},"ref":"1"}"#)
/// for try await text in client.messages { … }
/// await client.close()
/// ```
///
/// Foundation's `URLSessionWebSocketTask` needs a libcurl built with WebSocket support, which
/// Debian bookworm's is not; this client is what the CLI and the benchmarks use instead.
public final class WebSocketClient: Sendable {
    /// Text messages from the server, in order. Finishes when the server closes normally
    /// (1000/1001) or ``close(code:reason:)`` was called; throws ``WebSocketError`` when
    /// the connection dies, closes with another code, or the reader falls too far behind.
    public let messages: Messages
    private let loop: ClientLoop

    private init(loop: ClientLoop, messages: Messages) {
        self.loop = loop
        self.messages = messages
    }

    /// Connects and completes the WebSocket handshake; `headers` go with the upgrade request.
    /// Throws `.connectFailed` (nothing listens, timeout) or `.handshakeRefused` (a non-101
    /// answer; its status in the error's context when lws kept it).
    public static func connect(to url: String, headers: [String: String] = [:],
                               configuration: WebSocketClientConfiguration = .init(),
                               logger: Logger) async throws(WebSocketError) -> WebSocketClient {
        let target = try ClientTarget(url)
        let (stream, continuation) = AsyncThrowingStream<String, any Error>.makeStream(
            bufferingPolicy: .bufferingOldest(configuration.maxBufferedMessages))
        let loop = ClientLoop(target: target, headers: headers, configuration: configuration, messages: continuation, logger: logger)
        LWSLog.install(logger)
        let result: Result<Void, WebSocketError> = await withCheckedContinuation { ready in
            let thread = Thread { loop.run { ready.resume(returning: $0) } }
            thread.name = "websocket-client"
            thread.start()
        }
        try result.get()
        return WebSocketClient(loop: loop, messages: Messages(stream: stream))
    }

    /// Queues a text message; the service thread writes it (masked, as a client must).
    /// Never blocks; `.overflow` past the configured bounds, `.closed` once closing.
    @discardableResult
    public func send(_ text: String) -> WebSocketSendResult {
        loop.enqueue(WebSocketFrame(text: text))
    }

    /// Sends a close frame with `code` and `reason` after what is queued, waits for the
    /// connection to end (at most the configured grace period) and stops the service thread.
    public func close(code: UInt16 = 1000, reason: String = "") async {
        loop.requestClose(code: WebSocketConnection.isSendable(closeCode: code) ? code : 1000, reason: reason)
        await loop.waitUntilFinished()
    }

    /// The close code the server sent, once it closed (nil while open, or if it never sent one).
    public var serverCloseCode: UInt16? { loop.closeCode.withLock { $0 } }

    deinit { loop.requestClose(code: 1001, reason: "client going away") }

    /// The incoming text messages of one connection.
    public struct Messages: AsyncSequence, Sendable {
        public typealias Element = String
        let stream: AsyncThrowingStream<String, any Error>

        public func makeAsyncIterator() -> AsyncThrowingStream<String, any Error>.AsyncIterator {
            stream.makeAsyncIterator()
        }
    }
}

/// Settings of a ``WebSocketClient``.
public struct WebSocketClientConfiguration: Sendable {
    /// Seconds to establish the TCP connection and finish the handshake.
    public var connectTimeout: Int
    /// Incoming messages held for a reader that has not taken them yet; one more closes the
    /// connection (1008) and ends ``WebSocketClient/messages`` with `.receiveOverflow`.
    public var maxBufferedMessages: Int
    /// Outgoing messages that may wait to be written.
    public var maxQueuedMessages: Int
    /// Outgoing bytes that may wait to be written.
    public var maxQueuedBytes: Int
    /// Largest incoming message (after reassembling fragments); a bigger one closes with 1009.
    public var maxMessageBytes: Int
    /// Seconds ``WebSocketClient/close(code:reason:)`` waits for the server's close reply.
    public var closeGracePeriod: Double

    public init(connectTimeout: Int = 10, maxBufferedMessages: Int = 4_096, maxQueuedMessages: Int = 1_024,
                maxQueuedBytes: Int = 8 << 20, maxMessageBytes: Int = 1 << 20, closeGracePeriod: Double = 2) {
        self.connectTimeout = connectTimeout
        self.maxBufferedMessages = maxBufferedMessages
        self.maxQueuedMessages = maxQueuedMessages
        self.maxQueuedBytes = maxQueuedBytes
        self.maxMessageBytes = maxMessageBytes
        self.closeGracePeriod = closeGracePeriod
    }
}

/// Host, port and path-with-query of a `ws://` URL.
struct ClientTarget: Sendable {
    var host: String
    var port: Int
    var path: String

    init(_ text: String) throws(WebSocketError) {
        guard let components = URLComponents(string: text), let host = components.host, !host.isEmpty,
              ["ws", "http"].contains(components.scheme?.lowercased() ?? "")
        else {
            throw WebSocketError(.invalidURL, context: ["ws.url": text, "ws.reason": "expected ws://host[:port]/path"])
        }
        self.host = host
        port = components.port ?? 80
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        self.path = components.percentEncodedQuery.map { path + "?" + $0 } ?? path
    }
}
