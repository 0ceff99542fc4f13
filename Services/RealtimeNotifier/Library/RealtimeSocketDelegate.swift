import Auth
import Foundation
import HTTPRouting
import Lifecycle
import ServiceLogging
import Synchronization
import WebSocketServer

/// Connects the WebSocket transport to Phoenix sessions: refuses bad upgrades before the
/// handshake, gives each socket a ``RealtimeSession`` and closes idle ones.
final class RealtimeSocketDelegate: WebSocketServerDelegate {
    let environment: RealtimeEnvironment
    private let sessions = Mutex<[UInt64: RealtimeSession]>([:])
    /// Each socket's session task, waited for once the server stopped (which closes every socket).
    let sessionTasks = TaskSet()

    init(environment: RealtimeEnvironment) {
        self.environment = environment
    }

    var sessionCount: Int { sessions.withLock { $0.count } }

    /// The token of an upgrade: the `x-api-key` header, else the `apikey` parameter, else the
    /// `apikey` header (supabase-swift sends its key both ways). It is the project's anon key
    /// (what Supabase's SDKs send; the user's session comes in each join's `access_token`), or
    /// a user's session or a service token.
    static func apiKey(_ request: WebSocketUpgradeRequest) -> String? {
        if let header = request.headers["x-api-key"], !header.isEmpty { return header }
        if let query = request.query["apikey"], !query.isEmpty { return query }
        if let header = request.headers["apikey"], !header.isEmpty { return header }
        return nil
    }

    func shouldAccept(_ request: WebSocketUpgradeRequest) -> WebSocketAcceptDecision {
        guard PhoenixSerializer(vsn: request.query["vsn"]) != nil else {
            return .reject(.badRequest, error: "unsupported vsn \(request.query["vsn"] ?? "")")
        }
        guard let key = Self.apiKey(request) else { return .reject(.unauthorized, error: "missing apikey") }
        if case .failure(let error) = environment.authorizer.verify(key) {
            return .reject(.unauthorized, error: "invalid apikey: \(error.code.rawValue)")
        }
        return .accept
    }

    func connectionOpened(_ connection: WebSocketConnection) {
        guard let key = Self.apiKey(connection.request), case .success(let claims) = environment.authorizer.verify(key),
              let serializer = PhoenixSerializer(vsn: connection.request.query["vsn"]) else {
            connection.close(code: 1008, reason: "unauthorized")
            return
        }
        let session = RealtimeSession(connection: connection, serializer: serializer, claims: claims, environment: environment)
        sessions.withLock { $0[connection.id] = session }
        sessionTasks.spawn { await session.run() }
    }

    func connection(_ connection: WebSocketConnection, didReceiveText text: String) {
        sessions.withLock { $0[connection.id] }?.received(text)
    }

    func connectionClosed(_ connection: WebSocketConnection) {
        sessions.withLock { $0.removeValue(forKey: connection.id) }?.closed()
    }

    /// Closes sockets that sent nothing (not even a heartbeat) for the idle timeout.
    /// Closes the sockets of erased accounts (their tokens are refused from then on, so a
    /// socket opened before the erasure must not go on receiving): an error frame, then 1008.
    func closeErased() {
        let revoked = environment.authorizer.codec.revoked
        for session in sessions.withLock({ Array($0.values) }) where session.subjects.contains(where: revoked.contains) {
            session.connection.close(after: PhoenixMessage.system(topic: "phoenix", channel: "", status: "error",
                                                                  message: "the account was deleted").encode(session.serializer),
                                     code: 1008, reason: "account deleted")
        }
    }

    func closeIdle() {
        let limit = environment.configuration.idleTimeout.wholeMilliseconds
        for session in sessions.withLock({ Array($0.values) }) where session.idleMilliseconds > limit {
            session.connection.close(after: PhoenixMessage.system(topic: "phoenix", channel: "", status: "error",
                                                                  message: "idle timeout: no heartbeat").encode(session.serializer),
                                     code: 1000, reason: "idle timeout")
        }
    }
}
