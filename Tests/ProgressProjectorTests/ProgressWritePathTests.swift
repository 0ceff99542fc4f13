import BackboneTestSupport
import Contracts
import Foundation
import Postgres
import ProgressProjector
import Projection
import Testing

/// The batch write path directly (no Kafka): the COPY into the event log, and the fallback
/// when a batch holds events that are logged already.
@Suite("Progress write path", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(2)))
struct ProgressWritePathTests {
    static let t0 = Date(timeIntervalSince1970: 1_796_000_000.25)

    static func event(_ id: String, page: Int, delta: Int = 10, at seconds: Double) -> ProjectedEvent<ReadingEventRecord> {
        let record = ReadingEventRecord(userId: "u\tser\\1", receivedAt: t0, item: ReadingEventUploadItem(
            eventId: id, clientSessionId: "s\n1", readingTargetType: .knowledgeSource, materialId: "book", eventType: .heartbeat,
            position: .page(page, of: 40), activeSecondsDelta: delta, clientTimestamp: t0.addingTimeInterval(seconds),
            clientTimezoneOffsetMinutes: 0, sequence: Int(seconds), platform: "iOS", appVersion: "1"))
        return ProjectedEvent(event: record, topic: "t", partition: 0, offset: Int64(seconds))
    }

    func apply(_ projection: ReadingProgressProjection, _ events: [ProjectedEvent<ReadingEventRecord>],
               _ client: PostgresClient) async throws -> [ReadingProgressChanged] {
        try await client.withConnection { connection in
            try await connection.withTransaction { try await projection.apply(events, in: $0).map(\.change) }
        }
    }

    @Test("fresh batches are logged as they are; repeats within and across batches and whole replays count once")
    func dedup() async throws {
        let harness = try await ProgressHarness(databasePrefix: "progress_write")
        let projection = ReadingProgressProjection(producer: harness.producer, database: harness.client, progressTopic: "unused")
        let client = harness.client

        // A fresh batch with a repeat inside it.
        let first = [Self.event("e1", page: 1, at: 1), Self.event("e2", page: 2, at: 2), Self.event("e1", page: 1, at: 1)]
        let changed = try await apply(projection, first, client)
        #expect(changed.count == 1)
        #expect(changed.first?.totalActiveSeconds == 20)

        // A fallback whose transaction rolls back (and its staging table with it) leaves no trace.
        struct Abort: Error {}
        await #expect(throws: Abort.self) {
            try await client.withConnection { connection in
                try await connection.withTransaction { connection -> Int in
                    _ = try await projection.apply([Self.event("e2", page: 2, at: 2), Self.event("x", page: 9, at: 9)], in: connection)
                    throw Abort()
                }
            }
        }

        // Old and new events mixed: only the new ones count (the fallback path), twice over.
        for round in 0..<2 {
            let id = "e\(3 + round)"
            let mixed = [Self.event("e2", page: 2, at: 2), Self.event(id, page: 3 + round, at: Double(3 + round)), Self.event("e1", page: 1, at: 1)]
            let again = try await apply(projection, mixed, client)
            #expect(again.count == 1)
            #expect(again.first?.totalActiveSeconds == 30 + 10 * round)
            #expect(again.first?.lastPosition == .page(3 + round, of: 40))
        }

        // A whole batch replayed: nothing changes, nothing is reported.
        #expect(try await apply(projection, first, client).isEmpty)

        let log = try await client.query("""
            SELECT event_id, user_id, client_session_id, client_timestamp, kafka_offset FROM progress_event_log ORDER BY event_id
            """)
        #expect(try log.map { try $0.decode(String.self, "event_id") } == ["e1", "e2", "e3", "e4"])
        #expect(try log[0].decode(String.self, "user_id") == "u\tser\\1")
        #expect(try log[0].decode(String.self, "client_session_id") == "s\n1")
        #expect(try log[1].decode(Date.self, "client_timestamp") == Self.t0.addingTimeInterval(2))
        #expect(try log[3].decode(Int64.self, "kafka_offset") == 4)
        let row = try #require(try await client.query("SELECT total_active_seconds FROM reading_progress").first)
        #expect(try row.decode(Int64.self, "total_active_seconds") == 40)
        await harness.close()
    }
}
