/// How an `HTTPServer` binds and what it accepts.
public struct HTTPServerConfiguration: Sendable {
    /// Address to bind: an IPv4 or IPv6 literal, or `localhost`.
    public var host: String
    /// Port to bind; `0` picks a free ephemeral port (read it back from `HTTPServer.port`).
    public var port: Int
    /// Largest request body accepted; larger bodies are answered with 413 `PAYLOAD_TOO_LARGE`.
    public var maxBodyBytes: Int
    /// How long a connection may stay idle (no bytes in either direction) before it is closed.
    public var requestTimeout: Duration
    /// Most simultaneously open client connections; further connections are refused. The
    /// server raises its process's open-file limit (up to the hard limit) to fit them.
    public var maxConnections: Int
    /// Most handlers running at once; further fully received requests wait (suspended) for a slot.
    public var maxConcurrentRequests: Int
    /// How long `run()` lets in-flight requests finish once its task is cancelled.
    public var shutdownGracePeriod: Duration
    /// libmicrohttpd's memory pool of each connection (`MHD_OPTION_CONNECTION_MEMORY_LIMIT`): it
    /// holds the request line and headers, and half of it is the buffer a body is read through.
    /// libmicrohttpd zeroes the whole pool after every request of a kept-alive connection, so its
    /// size is paid on every request: 24 KiB by default, which takes headers of up to ~22 KiB
    /// (the gateway passes at most 16 KiB). A server built from a `Router` with streaming routes
    /// uses at least `streamingConnectionMemoryBytes`, so uploads arrive in 32 KiB pieces.
    public var connectionMemoryBytes: Int

    public static let defaultMaxBodyBytes = 8 * 1024 * 1024
    public static let defaultConnectionMemoryBytes = 24 * 1024
    public static let streamingConnectionMemoryBytes = 64 * 1024

    public init(host: String = "0.0.0.0", port: Int, maxBodyBytes: Int = HTTPServerConfiguration.defaultMaxBodyBytes,
                requestTimeout: Duration = .seconds(30), maxConnections: Int = 10_000,
                maxConcurrentRequests: Int = 256, shutdownGracePeriod: Duration = .seconds(10),
                connectionMemoryBytes: Int = HTTPServerConfiguration.defaultConnectionMemoryBytes) {
        self.host = host
        self.port = port
        self.maxBodyBytes = maxBodyBytes
        self.requestTimeout = requestTimeout
        self.maxConnections = maxConnections
        self.maxConcurrentRequests = maxConcurrentRequests
        self.shutdownGracePeriod = shutdownGracePeriod
        self.connectionMemoryBytes = connectionMemoryBytes
    }
}
