/// Why the server could not start or run, or why a ``WebSocketClient`` could not connect or
/// why its connection ended: a stable `code` and what it happened to.
public struct WebSocketError: Error, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// `lws_create_context` failed (bad options, out of memory).
        public static let contextCreationFailed = Code(rawValue: "CONTEXT_CREATION_FAILED")
        /// Server: the listening socket could not be created (port in use, bad host).
        public static let listenFailed = Code(rawValue: "LISTEN_FAILED")
        /// Server: `lws_service` failed while running.
        public static let serviceFailed = Code(rawValue: "SERVICE_FAILED")
        /// Server: `start()` was called twice, or after `shutdown()`.
        public static let invalidState = Code(rawValue: "INVALID_STATE")
        /// Client: not a `ws://` (or `http://`) URL with a host.
        public static let invalidURL = Code(rawValue: "INVALID_URL")
        /// Client: no connection: refused, unreachable, timed out.
        public static let connectFailed = Code(rawValue: "CONNECT_FAILED")
        /// Client: the server answered the upgrade with something other than 101.
        public static let handshakeRefused = Code(rawValue: "HANDSHAKE_REFUSED")
        /// Client: the connection ended without a normal close (1000/1001).
        public static let connectionLost = Code(rawValue: "CONNECTION_LOST")
        /// Client: the reader did not keep up with ``WebSocketClient/messages``.
        public static let receiveOverflow = Code(rawValue: "RECEIVE_OVERFLOW")
    }

    public var code: Code
    public var context: [String: String]
    public var isRetriable: Bool

    public init(_ code: Code, context: [String: String] = [:], isRetriable: Bool = false) {
        self.code = code
        self.context = context
        self.isRetriable = isRetriable
    }

    public var description: String {
        let details = context.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return details.isEmpty ? "WebSocketError(\(code.rawValue))" : "WebSocketError(\(code.rawValue) \(details))"
    }
}
