import BackboneTestSupport
import Contracts
import Foundation
import Kafka
import Postgres
import ProgressProjector
import Projection
import ServiceLogging
import Testing

@Suite("Progress notification outbox", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(3)))
struct ProgressOutboxTests {
    /// A harness with `topic` created and a projection publishing to it.
    static func setUp(_ prefix: String, topic: String) async throws -> (ProgressHarness, ReadingProgressProjection) {
        let harness = try await ProgressHarness(databasePrefix: prefix)
        try harness.createTopics([topic])
        return (harness, ReadingProgressProjection(producer: harness.producer, database: harness.client, progressTopic: topic))
    }

    @Test("a change committed without its publish (a crash in between) is published by the relay, once dequeued, in the trace of the event that made it")
    func relayPublishesWhatACrashLeftBehind() async throws {
        let (harness, projection) = try await Self.setUp("progress_outbox", topic: "outbox.progress")
        let events = ReadingStream.sessions(users: 3, materials: 2, sessionsPerPair: 1, seed: 7)
        // The first user's events came in a trace.
        let traced = try #require(events.first?.userId)
        let trace = try #require(TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        let projected = events.enumerated().map {
            ProjectedEvent(event: $1, topic: "t", partition: 0, offset: Int64($0), trace: $1.userId == traced ? trace : nil)
        }

        // The transaction commits; the process "dies" before afterCommit.
        let effects = try await harness.client.withTransaction { try await projection.apply(projected, in: $0) }
        #expect(effects.count == 6)
        let queued = try await harness.client.query("SELECT count(*)::bigint AS n FROM progress_notify_outbox")
        #expect(try queued.first?.decode(Int64.self, "n") == 6)
        #expect(try await harness.consumeAll("outbox.progress").isEmpty)

        // Within the grace period the relay leaves entries to the after-commit publish.
        let relay = OutboxRelay(name: "progress", outbox: ProgressNotificationOutbox(projection: projection, database: harness.client),
                                interval: .milliseconds(100), grace: .seconds(60), logger: .disabled)
        try await relay.relayPending()
        #expect(try await harness.consumeAll("outbox.progress").isEmpty)

        let eager = OutboxRelay(name: "progress", outbox: ProgressNotificationOutbox(projection: projection, database: harness.client),
                                interval: .milliseconds(100), grace: .zero, logger: .disabled)
        try await eager.relayPending()
        let published = try await harness.lastNotifications("outbox.progress")
        #expect(published == (try await harness.progressStates()))
        let records = try await harness.consumeAll("outbox.progress")
        for record in records {
            let user = String(decoding: record.key ?? [], as: UTF8.self)
            #expect(record.trace == (user == traced ? trace : nil), "\(user): \(record.headers)")
        }
        let left = try await harness.client.query("SELECT count(*)::bigint AS n FROM progress_notify_outbox")
        #expect(try left.first?.decode(Int64.self, "n") == 0)
        await harness.close()
    }

    @Test("a newer change of the same row stays queued when an older publish completes")
    func olderPublishDoesNotDequeueNewerChange() async throws {
        let (harness, projection) = try await Self.setUp("progress_outbox_order", topic: "outbox.order")
        let events = ReadingStream.sessions(users: 1, materials: 1, sessionsPerPair: 2, seed: 9)
        let half = events.count / 2
        func batch(_ slice: ArraySlice<ReadingEventRecord>) -> [ProjectedEvent<ReadingEventRecord>] {
            slice.enumerated().map { ProjectedEvent(event: $1, topic: "t", partition: 0, offset: Int64(slice.startIndex + $0)) }
        }
        let first = try await harness.client.withTransaction { try await projection.apply(batch(events[..<half]), in: $0) }
        let second = try await harness.client.withTransaction { try await projection.apply(batch(events[half...]), in: $0) }
        try await projection.afterCommit(first)  // late: the row has changed since
        let queued = try await harness.client.query("SELECT version FROM progress_notify_outbox")
        #expect(try queued.map { try $0.decode(Int64.self, "version") } == second.map(\.version))
        try await projection.afterCommit(second)
        #expect(try await harness.client.query("SELECT 1 FROM progress_notify_outbox").isEmpty)
        await harness.close()
    }
}
