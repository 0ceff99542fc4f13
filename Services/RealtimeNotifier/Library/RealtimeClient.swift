import Contracts
import Foundation
import JSON
import ServiceLogging
import Synchronization
import WebSocketServer

/// A client of the notifier's Phoenix/Supabase Realtime protocol (serializer 1.0.0) over
/// ``WebSocketClient``: join channels, receive their broadcasts in order. `backbone demo` and
/// the Flow A latency benchmark use it where an app would use supabase-swift.
///
/// ```swift
/// let realtime = try await RealtimeClient.connect(to: "http://127.0.0.1:8084", token: jwt, logger: logger)
/// try await realtime.join("room:\(roomId)", replay: .since(milliseconds: t0))
/// for await event in realtime.events { … }   // .broadcast(…), .system(…), .closed(channel:)
/// await realtime.close()
/// ```
///
/// One task, started by ``connect(to:token:heartbeat:logger:)`` and ended by ``close()`` (or
/// when the socket ends), reads the socket — replies go to the ``join(_:replay:accessToken:timeout:)``
/// that waits for them, everything else to ``events`` — and sends a `heartbeat` every `heartbeat`.
public final class RealtimeClient: Sendable {
    /// What arrives on a joined channel.
    public enum Event: Sendable, Equatable {
        case broadcast(Broadcast)
        /// A `system` message (`status` "ok"/"error"), e.g. a history that no longer reaches back.
        case system(channel: String, status: String, message: String)
        /// The server ended the subscription (`phx_close`).
        case closed(channel: String)
    }

    /// One channel event: the broadcast's own event name and payload, its channel sequence.
    public struct Broadcast: Sendable, Equatable {
        /// `room:{id}`, `user:{id}` (the topic without `realtime:`).
        public var channel: String
        public var event: String
        public var payload: JSONValue
        /// `meta.id`, the channel sequence.
        public var seq: Int64?
        /// `meta.replayed`: delivered by the catch-up from the history, not live.
        public var replayed: Bool
    }

    /// Why a join or the connection failed.
    public struct ClientError: Error, Sendable, CustomStringConvertible {
        public var description: String
        /// True when trying again may succeed (the socket dropped, a join timed out, the room is not known yet).
        public var isRetriable: Bool
    }

    /// Channel events in arrival order; finishes when the connection ends.
    public let events: AsyncStream<Event>
    private let socket: WebSocketClient
    private let state: Mutex<State>
    private let eventSink: AsyncStream<Event>.Continuation
    private let reader: Mutex<Task<Void, Never>?>

    private struct State: ~Copyable {
        var nextRef = 0
        var pending: [String: CheckedContinuation<PhoenixMessage, any Error>] = [:]
        var ended: ClientError?
    }

    private init(socket: WebSocketClient) {
        self.socket = socket
        (events, eventSink) = AsyncStream<Event>.makeStream(bufferingPolicy: .unbounded)
        state = Mutex(State())
        reader = Mutex(nil)
    }

    /// Connects to the notifier at `base` (`http://host:port`, `…/realtime/v1`, or the full
    /// `ws://…/realtime/v1/websocket`), authenticated by `token` (sent as `x-api-key`).
    public static func connect(to base: String, token: String, heartbeat: Duration = .seconds(25),
                               logger: Logger) async throws -> RealtimeClient {
        let socket = try await WebSocketClient.connect(to: websocketURL(base), headers: ["x-api-key": token], logger: logger)
        let client = RealtimeClient(socket: socket)
        client.reader.withLock { $0 = Task { await client.serve(heartbeat: heartbeat) } }
        return client
    }

    /// What supabase clients put in front of a channel name to make the Phoenix topic.
    static let topicPrefix = "realtime:"

    /// The channel of a Phoenix topic (`realtime:room:1` → `room:1`).
    static func channel(_ topic: String) -> String {
        topic.hasPrefix(topicPrefix) ? String(topic.dropFirst(topicPrefix.count)) : topic
    }

    /// `ws://host:port/realtime/v1/websocket?vsn=1.0.0` from any of the accepted forms of `base`.
    static func websocketURL(_ base: String) -> String {
        var url = base.hasSuffix("/") ? String(base.dropLast()) : base
        if url.hasPrefix("http://") { url = "ws://" + url.dropFirst("http://".count) }
        if !url.hasSuffix("/websocket") { url += url.hasSuffix("/realtime/v1") ? "/websocket" : "/realtime/v1/websocket" }
        return url + "?vsn=" + PhoenixSerializer.v1.rawValue
    }

    /// Joins `channel` (`room:{id}`, `user:{id}`; the Phoenix topic is `realtime:<channel>`, as
    /// supabase clients name it) and returns once the server answered ok;
    /// throws the server's reason otherwise (`isRetriable` for "Unauthorized: unknown room",
    /// which a room is until the notifier has seen its upload complete).
    public func join(_ channel: String, replay: JoinOptions.Replay? = nil, accessToken: String? = nil,
                     timeout: Duration = .seconds(10)) async throws {
        let topic = Self.topicPrefix + channel
        var broadcast: [String: JSONValue] = ["self": .bool(false), "ack": .bool(false)]
        switch replay {
        case .since(let milliseconds): broadcast["replay"] = .object(["since": .number(Double(milliseconds))])
        case .afterSeq(let seq): broadcast["replay"] = .object(["afterId": .string(String(seq))])
        case nil: break
        }
        var payload: [String: JSONValue] = [
            "config": .object(["broadcast": .object(broadcast), "presence": .object(["key": .string("")]),
                               "postgres_changes": .array([]), "private": .bool(false)]),
        ]
        if let accessToken { payload["access_token"] = .string(accessToken) }
        let reply = try await request(topic: topic, event: "phx_join", payload: .object(payload), joinsItself: true, timeout: timeout)
        guard reply.payload["status"]?.stringValue == "ok" else {
            let reason = reply.payload["response"]?["reason"]?.stringValue ?? "join refused"
            throw ClientError(description: "join \(channel): \(reason)", isRetriable: reason.contains("unknown room") || reason.contains("retry"))
        }
    }

    /// Leaves `channel` (its `phx_close` follows on ``events``).
    public func leave(_ channel: String, timeout: Duration = .seconds(10)) async throws {
        _ = try await request(topic: Self.topicPrefix + channel, event: "phx_leave", payload: .object([:]), joinsItself: false, timeout: timeout)
    }

    /// Closes the socket (1000) and ends ``events``.
    public func close() async {
        await socket.close()
        let task = reader.withLock { $0 }
        await task?.value
    }

    // MARK: Protocol

    /// Sends one message with a fresh ref and waits for the `phx_reply` carrying it.
    private func request(topic: String, event: String, payload: JSONValue, joinsItself: Bool,
                         timeout: Duration) async throws -> PhoenixMessage {
        let ref = state.withLock { state -> String in
            state.nextRef += 1
            return String(state.nextRef)
        }
        let message = PhoenixMessage(joinRef: joinsItself ? ref : nil, ref: ref, topic: topic, event: event, payload: payload)
        // The timeout is a child task, cancelled once the reply came.
        return try await withThrowingTaskGroup(of: Void.self) { timer in
            timer.addTask { [weak self] in
                guard (try? await Task.sleep(for: timeout)) != nil else { return }
                self?.resolve(ref, with: .failure(ClientError(description: "\(event) \(topic): no reply within \(timeout)", isRetriable: true)))
            }
            defer { timer.cancelAll() }
            return try await withCheckedThrowingContinuation { continuation in
                let ended = state.withLock { state -> ClientError? in
                    if let ended = state.ended { return ended }
                    state.pending[ref] = continuation
                    return nil
                }
                if let ended {
                    continuation.resume(throwing: ended)
                    return
                }
                if socket.send(message.encode(.v1)) != .queued {
                    resolve(ref, with: .failure(ClientError(description: "\(event) \(topic): the socket is closed", isRetriable: true)))
                }
            }
        }
    }

    private func resolve(_ ref: String, with result: Result<PhoenixMessage, any Error>) {
        let waiter = state.withLock { $0.pending.removeValue(forKey: ref) }
        waiter?.resume(with: result)
    }

    /// Reads the socket until it ends, with a heartbeat beside it; then fails whatever still waits.
    private func serve(heartbeat: Duration) async {
        let socket = self.socket
        var ending = ClientError(description: "the realtime socket closed", isRetriable: true)
        await withTaskGroup(of: Void.self) { beat in
            beat.addTask {
                var ref = 0
                while !Task.isCancelled {
                    try? await Task.sleep(for: heartbeat)
                    ref += 1
                    let message = PhoenixMessage(ref: "hb-\(ref)", topic: "phoenix", event: "heartbeat", payload: .object([:]))
                    if socket.send(message.encode(.v1)) == .closed { break }
                }
            }
            do {
                for try await text in socket.messages { receive(text) }
            } catch {
                ending = ClientError(description: "the realtime socket failed: \(error)", isRetriable: true)
            }
            beat.cancelAll()
        }
        let waiters = state.withLock { state -> [CheckedContinuation<PhoenixMessage, any Error>] in
            state.ended = ending
            defer { state.pending = [:] }
            return Array(state.pending.values)
        }
        for waiter in waiters { waiter.resume(throwing: ending) }
        eventSink.finish()
    }

    private func receive(_ text: String) {
        guard let message = try? PhoenixMessage.decode(text, serializer: .v1) else { return }
        switch message.event {
        case "phx_reply":
            if let ref = message.ref { resolve(ref, with: .success(message)) }
        case "broadcast":
            let body = message.payload
            let meta = body["meta"]
            eventSink.yield(.broadcast(Broadcast(
                channel: Self.channel(message.topic), event: body["event"]?.stringValue ?? "", payload: body["payload"] ?? .object([:]),
                seq: meta?["id"]?.stringValue.flatMap { Int64($0) }, replayed: meta?["replayed"]?.boolValue ?? false)))
        case "system":
            eventSink.yield(.system(channel: Self.channel(message.topic), status: message.payload["status"]?.stringValue ?? "",
                                    message: message.payload["message"]?.stringValue ?? ""))
        case "phx_close":
            eventSink.yield(.closed(channel: Self.channel(message.topic)))
        default:
            break
        }
    }
}
