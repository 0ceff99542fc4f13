import HTTPRouting
import JSON
import ServiceLogging

/// Receives the life of every WebSocket connection.
///
/// Every method is called on the server's single service thread, which also moves every
/// byte of every other connection: implementations must return quickly and hop to their own
/// actor or queue for real work. ``WebSocketConnection/send(_:)`` may be called from here or
/// from any other thread.
public protocol WebSocketServerDelegate: Sendable {
    /// Decides on an upgrade request before the handshake is answered. A rejection reaches the
    /// client as a plain HTTP response with that status and body; nothing is upgraded.
    func shouldAccept(_ request: WebSocketUpgradeRequest) -> WebSocketAcceptDecision
    /// The handshake completed; the connection can send and receive.
    func connectionOpened(_ connection: WebSocketConnection)
    /// A whole text message arrived (fragments already reassembled).
    func connection(_ connection: WebSocketConnection, didReceiveText text: String)
    /// A whole binary message arrived. The default implementation ignores it.
    func connection(_ connection: WebSocketConnection, didReceiveBinary data: [UInt8])
    /// The connection is gone (either side closed it, or it died); `send` now returns `.closed`.
    func connectionClosed(_ connection: WebSocketConnection)
}

extension WebSocketServerDelegate {
    public func connection(_ connection: WebSocketConnection, didReceiveBinary data: [UInt8]) {}
}

/// What the client sent when asking to upgrade.
public struct WebSocketUpgradeRequest: Sendable {
    /// The path without the query string.
    public var path: String
    /// Query parameters (the last value of a repeated key wins).
    public var query: [String: String]
    /// Request headers with case-insensitive lookup (`x-api-key`, `authorization`, `user-agent`, `origin`, …).
    public var headers: HTTPHeaders
    /// The peer's IP address, when known.
    public var remoteAddress: String?

    public init(path: String, query: [String: String] = [:], headers: HTTPHeaders = [:], remoteAddress: String? = nil) {
        self.path = path
        self.query = query
        self.headers = headers
        self.remoteAddress = remoteAddress
    }
}

/// The delegate's answer to an upgrade request.
public enum WebSocketAcceptDecision: Sendable, Equatable {
    case accept
    /// Answer with this HTTP status and this JSON body instead of upgrading.
    case reject(status: HTTPStatus, body: String)

    /// A rejection whose body is `{"error":"<message>"}`.
    public static func reject(_ status: HTTPStatus, error message: String) -> WebSocketAcceptDecision {
        .reject(status: status, body: "{\"error\":\(JSONString.quote(message))}")
    }
}

/// The outcome of ``WebSocketConnection/send(_:)``.
public enum WebSocketSendResult: Sendable, Equatable {
    /// The message is queued and will be written in order.
    case queued
    /// The queue would exceed its bounds; nothing was queued. Close the connection
    /// (e.g. `close(after: systemError, …)`): messages after a gap are worthless.
    case overflow
    /// The connection is closing or closed; nothing was queued.
    case closed
}
