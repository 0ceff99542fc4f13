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

    public static let defaultMaxBodyBytes = 8 * 1024 * 1024

    public init(host: String = "0.0.0.0", port: Int, maxBodyBytes: Int = HTTPServerConfiguration.defaultMaxBodyBytes,
                requestTimeout: Duration = .seconds(30), maxConnections: Int = 10_000,
                maxConcurrentRequests: Int = 256, shutdownGracePeriod: Duration = .seconds(10)) {
        self.host = host
        self.port = port
        self.maxBodyBytes = maxBodyBytes
        self.requestTimeout = requestTimeout
        self.maxConnections = maxConnections
        self.maxConcurrentRequests = maxConcurrentRequests
        self.shutdownGracePeriod = shutdownGracePeriod
    }
}
