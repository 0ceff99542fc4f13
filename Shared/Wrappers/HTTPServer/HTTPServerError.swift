/// A failure of the server itself (not of a request): binding, configuration, lifecycle.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The listening socket could not be created or bound (port in use, permission, bad address).
        public static let bindFailed = Code(rawValue: "BIND_FAILED")
        /// A configuration value is out of range or unparsable.
        public static let invalidConfiguration = Code(rawValue: "INVALID_CONFIGURATION")
        /// `start()` was called on a server that was shut down; servers are not restartable.
        public static let alreadyShutDown = Code(rawValue: "ALREADY_SHUT_DOWN")

        public var description: String { rawValue }
    }

    public var code: Code
    public var message: String
    public var host: String
    public var port: Int
    /// The OS error number behind the failure, when there is one.
    public var errno: Int32?

    public init(_ code: Code, message: String, host: String, port: Int, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.host = host
        self.port = port
        self.errno = errno
    }

    /// A bind failure may clear (the port is released); configuration and lifecycle errors do not.
    public var isRetriable: Bool { code == .bindFailed }

    public var description: String {
        "HTTPServerError(\(code)): \(message) [\(host):\(port)]"
    }
}
