import Contracts
import Foundation
import Lifecycle
import ServiceLogging
import Synchronization
import WebSocketServer

/// The local sockets joined to each channel, and the in-order, gap-free, duplicate-free
/// delivery of sequenced events to them.
///
/// Each subscription remembers the last sequence it delivered. A live event is sent only if
/// it is the next one; an older one is dropped (already delivered by a replay), and a newer
/// one (a gap: the instance started late, events were published out of order…) parks the
/// subscription in catch-up: live events are buffered while the missing range is read from
/// the history, then both are merged in order. A join is the same catch-up, starting where
/// the client asked.
public final class SubscriptionHub: Sendable {
    /// One socket joined to one channel. Mutated only under the hub's lock.
    final class Subscriber: @unchecked Sendable {
        let connection: WebSocketConnection
        let channel: ChannelName
        let serializer: PhoenixSerializer
        let token: UInt64
        let origin: String
        let receiveOwn: Bool
        var lastSeq: Int64 = -1
        var catchingUp = true
        var pending: [SequencedChannelEvent] = []
        /// `lastSeq` when the previous probe found this subscription behind the channel.
        var behindAt: Int64?

        init(connection: WebSocketConnection, channel: ChannelName, serializer: PhoenixSerializer, token: UInt64,
             origin: String, receiveOwn: Bool) {
            self.connection = connection
            self.channel = channel
            self.serializer = serializer
            self.token = token
            self.origin = origin
            self.receiveOwn = receiveOwn
        }
    }

    enum Outcome: Equatable {
        case done
        case gap(after: Int64)
        case gone
    }

    private let channels = Mutex<[String: [UInt64: Subscriber]]>([:])
    private let nextToken = Atomic<UInt64>(1)
    /// Set once this instance's live consumer has its partitions: joins wait for it (a
    /// catch-up read before that could miss events published in between).
    private let live = Atomic<Bool>(false)
    let history: ChannelHistory
    let maxPending: Int
    let logger: Logger
    let delivered = Atomic<Int>(0)
    /// Catch-ups started by a gap or a probe, waited for when the server stops.
    let catchUps = TaskSet()
    /// Live delivery queues every subscriber's frame, then wakes the WebSocket service thread
    /// once (``WebSocketSendBatch``); a long batch of events wakes it every this many
    /// newly busy sockets so the writes start before the whole batch is queued.
    static let wakeEvery = 512

    public init(history: ChannelHistory, maxPending: Int, logger: Logger) {
        self.history = history
        self.maxPending = maxPending
        self.logger = logger
    }

    /// Total messages handed to sockets (for metrics).
    public var deliveredCount: Int { delivered.load(ordering: .relaxed) }

    /// Number of subscriptions (for metrics and tests).
    public var subscriptionCount: Int { channels.withLock { $0.values.reduce(0) { $0 + $1.count } } }

    /// Registers a subscription (replacing an older one of the same socket) and catches it
    /// up from `replay` (or from now). Returns once the catch-up is delivered.
    func subscribe(_ connection: WebSocketConnection, channel: ChannelName, serializer: PhoenixSerializer, origin: String,
                   receiveOwn: Bool, replay: JoinOptions.Replay?) async -> UInt64 {
        let token = nextToken.add(1, ordering: .relaxed).oldValue
        let subscriber = Subscriber(connection: connection, channel: channel, serializer: serializer, token: token,
                                    origin: origin, receiveOwn: receiveOwn)
        channels.withLock { $0[channel.name, default: [:]][connection.id] = subscriber }
        let deadline = ContinuousClock.now + .seconds(15)
        while !isLive, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        await catchUp(channel: channel, connectionID: connection.id, token: token, replay: replay, replayed: replay != nil)
        return token
    }

    /// The live consumer is positioned (called from its rebalance listener).
    func markLive() { live.store(true, ordering: .releasing) }

    /// True once this instance's consumer of sequenced events has its partitions.
    public var isLive: Bool { live.load(ordering: .acquiring) }

    /// Removes a subscription (only the one with `token`, when given).
    func unsubscribe(channel: ChannelName, connectionID: UInt64, token: UInt64? = nil) {
        channels.withLock { all in
            guard let current = all[channel.name]?[connectionID], token == nil || current.token == token else { return }
            all[channel.name]?[connectionID] = nil
            if all[channel.name]?.isEmpty == true { all[channel.name] = nil }
        }
    }

    /// Delivers live events (in the order read from `realtime.sequenced.v1`).
    public func deliver(_ events: [SequencedChannelEvent]) {
        var gaps: [(ChannelName, UInt64, UInt64, Int64)] = []
        var batch = WebSocketSendBatch()
        channels.withLock { all in
            for event in events {
                guard let subscribers = all[event.channel], !subscribers.isEmpty else { continue }
                var frames = FrameCache(event: event, replayed: false)
                for subscriber in subscribers.values {
                    if subscriber.catchingUp {
                        subscriber.pending.append(event)
                        if subscriber.pending.count > maxPending { overflow(subscriber, in: &all) }
                        continue
                    }
                    if event.seq <= subscriber.lastSeq { continue }
                    if event.seq > subscriber.lastSeq + 1 {
                        subscriber.catchingUp = true
                        subscriber.pending = [event]
                        gaps.append((subscriber.channel, subscriber.connection.id, subscriber.token, subscriber.lastSeq))
                        logger.debug("gap in live events; catching up from the history", metadata: [
                            "realtime.channel": event.channel, "realtime.seq": "\(event.seq)", "realtime.last_seq": "\(subscriber.lastSeq)"])
                        continue
                    }
                    send(event, to: subscriber, frames: &frames, batch: &batch, in: &all)
                }
                // A long batch of events starts the writes before it is all queued.
                if batch.pendingWakes >= Self.wakeEvery { batch.flush() }
            }
        }
        batch.flush()
        for (channel, connectionID, token, after) in gaps {
            catchUps.spawn { await self.catchUp(channel: channel, connectionID: connectionID, token: token, replay: .afterSeq(after), replayed: false) }
        }
    }

    /// Channels with local subscribers (for the probe).
    var subscribedChannels: [String] { channels.withLock { Array($0.keys) } }

    /// The safety net behind live delivery: given each channel's last sequence in Postgres,
    /// a settled subscription that stayed behind across two probes (its live event was never
    /// seen: the live consumer was not yet positioned, a broker lost it…) catches up from the
    /// history. Returns how many catch-ups it started.
    @discardableResult
    func probe(latest: [String: Int64]) -> Int {
        var lagging: [(ChannelName, UInt64, UInt64, Int64)] = []
        channels.withLock { all in
            for (channel, last) in latest {
                for subscriber in all[channel]?.values ?? [:].values where !subscriber.catchingUp {
                    guard subscriber.lastSeq < last else {
                        subscriber.behindAt = nil
                        continue
                    }
                    if subscriber.behindAt == subscriber.lastSeq {
                        subscriber.catchingUp = true
                        subscriber.behindAt = nil
                        lagging.append((subscriber.channel, subscriber.connection.id, subscriber.token, subscriber.lastSeq))
                    } else {
                        subscriber.behindAt = subscriber.lastSeq
                    }
                }
            }
        }
        for (channel, connectionID, token, after) in lagging {
            logger.notice("subscription behind the history; catching up", metadata: ["realtime.channel": channel.name])
            catchUps.spawn { await self.catchUp(channel: channel, connectionID: connectionID, token: token, replay: .afterSeq(after), replayed: false) }
        }
        return lagging.count
    }

    /// Reads the missing range from the history and merges it with what arrived live meanwhile.
    func catchUp(channel: ChannelName, connectionID: UInt64, token: UInt64, replay: JoinOptions.Replay?, replayed: Bool) async {
        var request = replay
        var replayed = replayed
        for attempt in 0..<20 {
            do {
                let state = try await history.state(channel)
                let start = try await history.start(channel, replay: request, state: state)
                let events = try await history.events(channel, after: start.after, through: start.through)
                let outcome = complete(channel: channel, connectionID: connectionID, token: token, start: start,
                                       events: events, replayed: replayed)
                guard case .gap(let after) = outcome else { return }
                request = .afterSeq(after)
                replayed = false
                if attempt > 0 { try await Task.sleep(for: .milliseconds(20 * attempt)) }
            } catch {
                logger.warning("channel catch-up failed; retrying", metadata: ["realtime.channel": channel.name, "error": "\(error)"])
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        // The history never filled the gap: say so rather than stall the channel.
        channels.withLock { all in
            guard let subscriber = all[channel.name]?[connectionID], subscriber.token == token else { return }
            let text = PhoenixMessage.system(topic: channel.topic, channel: channel.name, status: "error",
                                             message: "events after \(subscriber.lastSeq) could not be recovered").encode(subscriber.serializer)
            var batch = WebSocketSendBatch()
            _ = subscriber.connection.send(WebSocketFrame(text: text), batch: &batch)
            subscriber.pending.sort { $0.seq < $1.seq }
            for event in subscriber.pending where event.seq > subscriber.lastSeq {
                var frames = FrameCache(event: event, replayed: false)
                guard send(event, to: subscriber, frames: &frames, batch: &batch, in: &all) else { return }
            }
            subscriber.pending = []
            subscriber.catchingUp = false
        }
    }

    /// Under the lock: deliver history rows, then the buffered live events, in order.
    func complete(channel: ChannelName, connectionID: UInt64, token: UInt64, start: ChannelHistory.ReplayStart,
                  events: [SequencedChannelEvent], replayed: Bool) -> Outcome {
        var batch = WebSocketSendBatch()
        defer { batch.flush() }
        return channels.withLock { all -> Outcome in
            guard let subscriber = all[channel.name]?[connectionID], subscriber.token == token else { return .gone }
            if start.truncated {
                let text = PhoenixMessage.system(
                    topic: channel.topic, channel: channel.name, status: "error",
                    message: "history no longer reaches back: events up to \(start.after) were trimmed; replaying from \(start.after + 1)")
                    .encode(subscriber.serializer)
                _ = subscriber.connection.send(WebSocketFrame(text: text), batch: &batch)
            }
            if subscriber.lastSeq < start.after { subscriber.lastSeq = start.after }
            for event in events where event.seq > subscriber.lastSeq {
                var frames = FrameCache(event: event, replayed: replayed)
                guard send(event, to: subscriber, frames: &frames, batch: &batch, in: &all) else { return .gone }
            }
            if subscriber.lastSeq < start.through { subscriber.lastSeq = start.through }
            subscriber.pending.sort { $0.seq < $1.seq }
            var index = 0
            while index < subscriber.pending.count {
                let event = subscriber.pending[index]
                if event.seq <= subscriber.lastSeq {
                    index += 1
                } else if event.seq == subscriber.lastSeq + 1 {
                    var frames = FrameCache(event: event, replayed: false)
                    guard send(event, to: subscriber, frames: &frames, batch: &batch, in: &all) else { return .gone }
                    index += 1
                } else {
                    subscriber.pending.removeFirst(index)
                    return .gap(after: subscriber.lastSeq)
                }
            }
            subscriber.pending = []
            subscriber.catchingUp = false
            return .done
        }
    }

    /// Sends one event (or skips the sender's own broadcast) and advances the subscription;
    /// false if the socket is gone or was cut off.
    @discardableResult
    private func send(_ event: SequencedChannelEvent, to subscriber: Subscriber, frames: inout FrameCache,
                      batch: inout WebSocketSendBatch, in all: inout [String: [UInt64: Subscriber]]) -> Bool {
        subscriber.lastSeq = event.seq
        if !subscriber.receiveOwn, let origin = event.origin, origin == subscriber.origin { return true }
        switch subscriber.connection.send(frames.frame(subscriber.channel, subscriber.serializer), batch: &batch) {
        case .queued:
            delivered.add(1, ordering: .relaxed)
            return true
        case .overflow:
            overflow(subscriber, in: &all)
            return false
        case .closed:
            Self.forget(subscriber, in: &all)
            return false
        }
    }

    /// A slow consumer: tell it why, close it, forget its subscription.
    private func overflow(_ subscriber: Subscriber, in all: inout [String: [UInt64: Subscriber]]) {
        let text = PhoenixMessage.system(
            topic: subscriber.channel.topic, channel: subscriber.channel.name, status: "error",
            message: "slow consumer: too many undelivered messages; reconnect and replay after \(subscriber.lastSeq)")
            .encode(subscriber.serializer)
        subscriber.connection.close(after: text, code: 1013, reason: "slow consumer")
        Self.forget(subscriber, in: &all)
        logger.notice("slow consumer cut off", metadata: ["realtime.channel": subscriber.channel.name,
                                                          "ws.connection": "\(subscriber.connection.id)"])
    }

    /// Removes `subscriber`, and its channel's entry once no subscriber is left: a channel whose
    /// last socket closed while its events flowed would otherwise stay for the process's life.
    private static func forget(_ subscriber: Subscriber, in all: inout [String: [UInt64: Subscriber]]) {
        all[subscriber.channel.name]?[subscriber.connection.id] = nil
        if all[subscriber.channel.name]?.isEmpty == true { all[subscriber.channel.name] = nil }
    }
}
