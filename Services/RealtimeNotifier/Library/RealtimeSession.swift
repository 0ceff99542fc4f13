import Auth
import Contracts
import Foundation
import JSON
import Kafka
import ServiceLogging
import Synchronization
import WebSocketServer

/// The Phoenix protocol on one socket. Messages are handled one at a time, in order, on the
/// session's own task (never on the WebSocket service thread).
final class RealtimeSession: Sendable {
    struct Joined: Sendable {
        var joinRef: String?
        var channel: ChannelName
        var token: UInt64
        var claims: JWTClaims
        var options: JoinOptions
    }

    let connection: WebSocketConnection
    let serializer: PhoenixSerializer
    let environment: RealtimeEnvironment
    let origin: String
    private let socketClaims: JWTClaims
    private let inbox: AsyncStream<String>.Continuation
    private let inboxStream: AsyncStream<String>
    /// Only the session task touches `joined` (the lock just makes that checkable).
    private let joined = Mutex<[String: Joined]>([:])
    private let lastSeen: Atomic<Int64>

    init(connection: WebSocketConnection, serializer: PhoenixSerializer, claims: JWTClaims, environment: RealtimeEnvironment) {
        self.connection = connection
        self.serializer = serializer
        self.socketClaims = claims
        self.environment = environment
        self.origin = "\(environment.configuration.instanceID)/\(connection.id)"
        (inboxStream, inbox) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingOldest(256))
        lastSeen = Atomic(Self.now())
    }

    static func now() -> Int64 { Int64(DispatchTime.now().uptimeNanoseconds / 1_000_000) }

    /// Milliseconds since the client last sent anything.
    var idleMilliseconds: Int64 { Self.now() - lastSeen.load(ordering: .relaxed) }

    /// The users this socket acts for: its own token's and each joined channel's (the anon key
    /// acts for nobody).
    var subjects: [String] {
        ([socketClaims] + joined.withLock { $0.values.map(\.claims) }).filter { !$0.isAnonymous }.map(\.sub)
    }

    /// Called on the service thread: queue and return.
    func received(_ text: String) {
        lastSeen.store(Self.now(), ordering: .relaxed)
        if case .dropped = inbox.yield(text) {
            connection.close(after: PhoenixMessage.system(topic: "phoenix", channel: "", status: "error",
                                                          message: "too many messages in flight").encode(serializer),
                             code: 1008, reason: "too many messages")
        }
    }

    func closed() { inbox.finish() }

    /// Handles messages until the socket closes, then drops every subscription.
    func run() async {
        for await text in inboxStream {
            await handle(text)
        }
        for entry in joined.withLock({ Array($0.values) }) {
            environment.hub.unsubscribe(channel: entry.channel, connectionID: connection.id, token: entry.token)
        }
    }

    func reply(_ message: PhoenixMessage) {
        if connection.send(message.encode(serializer)) == .overflow {
            connection.close(after: PhoenixMessage.system(topic: message.topic, channel: "", status: "error",
                                                          message: "slow consumer: too many undelivered messages").encode(serializer),
                             code: 1013, reason: "slow consumer")
        }
    }

    func handle(_ text: String) async {
        let message: PhoenixMessage
        do {
            message = try PhoenixMessage.decode(text, serializer: serializer)
        } catch {
            reply(PhoenixMessage.error(to: PhoenixMessage(topic: "phoenix", event: "phx_reply", payload: .null),
                                       reason: "malformed frame: \(error.description)"))
            return
        }
        switch (message.topic, message.event) {
        case ("phoenix", "heartbeat"):
            reply(.ok(to: message))
        case (_, "phx_join"):
            await join(message)
        case (_, "phx_leave"):
            leave(message)
        case (_, "access_token"):
            await refreshToken(message)
        case (_, "broadcast"):
            await clientBroadcast(message)
        case (_, "presence"):
            reply(.ok(to: message))
        default:
            if joined.withLock({ $0[message.topic] }) == nil {
                reply(.error(to: message, reason: "unmatched topic"))
            } else {
                reply(.error(to: message, reason: "unsupported event \(message.event)"))
            }
        }
    }

    func join(_ message: PhoenixMessage) async {
        guard let channel = ChannelName(topic: message.topic) else {
            reply(.error(to: message, reason: "unmatched topic"))
            return
        }
        let options = JoinOptions(payload: message.payload)
        if let old = joined.withLock({ $0.removeValue(forKey: message.topic) }) {
            environment.hub.unsubscribe(channel: old.channel, connectionID: connection.id, token: old.token)
            reply(.close(topic: message.topic, joinRef: old.joinRef))
        }
        guard joined.withLock({ $0.count }) < environment.configuration.maxChannelsPerSocket else {
            reply(.error(to: message, reason: "too many channels on this socket"))
            return
        }
        // The join's `access_token` (the user's session, or the anon key while nobody is signed
        // in) decides; without one, the socket's apikey does.
        let verification = if let token = options.accessToken {
            await environment.authorizer.verifyRefreshingKeys(token)
        } else {
            Result<JWTClaims, AuthError>.success(socketClaims)
        }
        let claims: JWTClaims
        switch verification {
        case .success(let verified): claims = verified
        case .failure(let error):
            reply(.error(to: message, reason: "Unauthorized: invalid access_token (\(error.code.rawValue))"))
            return
        }
        do {
            if case .denied(let reason) = try await environment.authorizer.canRead(claims, channel) {
                reply(.error(to: message, reason: reason))
                return
            }
        } catch {
            environment.logger.warning("join authorization failed", metadata: ["realtime.channel": channel.name, "error": "\(error)"])
            reply(.error(to: message, reason: "authorization unavailable, retry"))
            return
        }
        reply(.ok(to: message, response: .object(["postgres_changes": .array([])])))
        let token = await environment.hub.subscribe(connection, channel: channel, serializer: serializer, origin: origin,
                                                    receiveOwn: options.receiveOwnBroadcasts, replay: options.replay)
        joined.withLock {
            $0[message.topic] = Joined(joinRef: message.joinRef ?? message.ref, channel: channel, token: token, claims: claims, options: options)
        }
    }

    func leave(_ message: PhoenixMessage) {
        let old = joined.withLock { $0.removeValue(forKey: message.topic) }
        if let old { environment.hub.unsubscribe(channel: old.channel, connectionID: connection.id, token: old.token) }
        reply(.ok(to: message))
        reply(.close(topic: message.topic, joinRef: old?.joinRef ?? message.joinRef ?? message.ref))
    }

    /// Re-verifies a refreshed token, which from then on is the channel's identity; a bad one
    /// (or one no longer allowed on the channel: the anon key a signed-out app sends on a private
    /// room) ends the channel with a `system` error.
    func refreshToken(_ message: PhoenixMessage) async {
        guard let entry = joined.withLock({ $0[message.topic] }) else {
            reply(.error(to: message, reason: "unmatched topic"))
            return
        }
        let token = message.payload["access_token"]?.stringValue ?? ""
        var failure: String?
        switch await environment.authorizer.verifyRefreshingKeys(token) {
        case .failure(let error):
            failure = "invalid access_token (\(error.code.rawValue))"
        case .success(let claims):
            do {
                if case .denied(let reason) = try await environment.authorizer.canRead(claims, entry.channel) {
                    failure = reason
                } else {
                    joined.withLock { $0[message.topic]?.claims = claims }
                }
            } catch {
                failure = "authorization unavailable"
            }
        }
        guard let failure else { return }
        _ = joined.withLock { $0.removeValue(forKey: message.topic) }
        environment.hub.unsubscribe(channel: entry.channel, connectionID: connection.id, token: entry.token)
        reply(.system(topic: message.topic, channel: entry.channel.name, status: "error", message: failure, joinRef: entry.joinRef))
        reply(.close(topic: message.topic, joinRef: entry.joinRef))
    }

    /// A client's own broadcast goes through the sequencer like every other event.
    func clientBroadcast(_ message: PhoenixMessage) async {
        guard let entry = joined.withLock({ $0[message.topic] }) else {
            reply(.error(to: message, reason: "unmatched topic"))
            return
        }
        guard let event = message.payload["event"]?.stringValue, !event.isEmpty else {
            reply(.error(to: message, reason: "a broadcast needs an event"))
            return
        }
        do {
            if case .denied(let reason) = try await environment.authorizer.canWrite(entry.claims, entry.channel) {
                reply(.error(to: message, reason: reason))
                return
            }
            let broadcast = RealtimeBroadcast(channel: entry.channel.name, event: event,
                                              payload: message.payload["payload"] ?? .object([:]), origin: origin)
            _ = try await environment.producer.send(KafkaProducerRecord(
                topic: environment.configuration.broadcastsTopic, key: Array(entry.channel.name.utf8),
                value: try ContractCoding.encode(broadcast)))
            if entry.options.acknowledgeBroadcasts { reply(.ok(to: message)) }
        } catch {
            reply(.error(to: message, reason: "broadcast failed, retry"))
        }
    }
}
