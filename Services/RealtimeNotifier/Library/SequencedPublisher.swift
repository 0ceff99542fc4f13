import Contracts
import Foundation
import Kafka
import Lifecycle
import Postgres
import ServiceLogging
import Synchronization

/// Publishes sequenced events to `realtime.sequenced.v1` (key: channel) and marks their
/// history rows published once the broker acknowledged them.
///
/// The marking is not on the events' path: `publish` returns once the broker acknowledged,
/// and the rows are marked by ``PublishedMarks`` in the background. The sequencer runs each
/// batch's publish after the previous one's, so a PostgreSQL round trip here would delay the
/// next batch's events (by tens of milliseconds when the machine is busy).
public struct SequencedPublisher: Sendable {
    let producer: any KafkaRecordSender
    let database: PostgresClient
    let topic: String
    let marks: PublishedMarks

    public init(producer: any KafkaRecordSender, database: PostgresClient, topic: String = Topics.realtimeSequenced,
                logger: Logger = Logger(label: "realtime-notifier")) {
        self.producer = producer
        self.database = database
        self.topic = topic
        self.marks = PublishedMarks(database: database, logger: logger)
    }

    /// Sends every event; throws the first failure (after queuing the acknowledged ones for marking).
    public func publish(_ events: [SequencedChannelEvent]) async throws {
        guard !events.isEmpty else { return }
        let records = try events.map {
            KafkaProducerRecord(topic: topic, key: Array($0.channel.utf8), value: try SequencedEventJSON.value($0),
                                headers: $0.trace.map { [.trace($0)] } ?? [])
        }
        var acknowledged: [SequencedChannelEvent] = []
        var failure: (any Error)?
        for (event, result) in zip(events, await producer.send(records)) {
            switch result {
            case .success: acknowledged.append(event)
            case .failure(let error): failure = failure ?? error
            }
        }
        marks.add(acknowledged)
        if let failure { throw failure }
    }

    /// Waits (up to `timeout`) until every acknowledged event so far is marked published.
    public func flushMarks(timeout: Duration = .seconds(5)) async {
        await marks.waitUntilIdle(timeout: timeout)
    }

    /// On shutdown: waits (up to `timeout`) for the marks, then cancels the marking still
    /// running and waits for it to end.
    public func shutdown(timeout: Duration = .seconds(5)) async {
        await flushMarks(timeout: timeout)
        await marks.drains.shutdown()
    }
}

/// Marks acknowledged history rows published, off the publish path: one `UPDATE` at a time,
/// covering everything acknowledged since the previous one. A row whose mark is lost (a
/// failed update, a crash first) stays unpublished and is re-published by the maintenance
/// loop after its grace period; subscribers drop the duplicate by its sequence.
final class PublishedMarks: Sendable {
    private struct State {
        var channels: [String] = []
        var seqs: [Int64] = []
        var running = false
    }

    private let state = Mutex(State())
    private let database: PostgresClient
    private let logger: Logger
    /// The task marking rows (one at a time), owned by the publisher's `shutdown()`.
    let drains = TaskSet()

    init(database: PostgresClient, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    func add(_ events: [SequencedChannelEvent]) {
        guard !events.isEmpty else { return }
        let start = state.withLock { state -> Bool in
            state.channels.append(contentsOf: events.map(\.channel))
            state.seqs.append(contentsOf: events.map(\.seq))
            defer { state.running = true }
            return !state.running
        }
        if start { drains.spawn { await self.drain() } }
    }

    private func drain() async {
        while true {
            let next = state.withLock { state -> ([String], [Int64])? in
                guard !state.channels.isEmpty else {
                    state.running = false
                    return nil
                }
                defer {
                    state.channels = []
                    state.seqs = []
                }
                return (state.channels, state.seqs)
            }
            guard let (channels, seqs) = next else { return }
            do {
                _ = try await database.execute(RealtimeSQL.markPublished, [channels, seqs])
            } catch {
                logger.warning("marking sequenced events published failed; the outbox will re-publish them",
                               metadata: ["realtime.count": "\(channels.count)", "error": "\(error)"])
            }
        }
    }

    func waitUntilIdle(timeout: Duration) async {
        let deadline = ContinuousClock.now + timeout
        while state.withLock({ $0.running }), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}
