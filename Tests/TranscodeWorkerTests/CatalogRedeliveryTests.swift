import BackboneTestSupport
import Contracts
import Foundation
import Postgres
import Projection
import ServiceLogging
import Testing
@testable import TranscodeWorker

/// The catalog projection against a real PostgreSQL, its batches applied as the runner applies
/// them: statuses delivered more than once (the worker's status outbox publishes at least once,
/// an operator replays a topic) change neither the version's state nor its attempts.
@Suite("Room catalog: statuses delivered again", .serialized, .timeLimit(.minutes(2)),
       .enabled(if: Integration.isEnabled, "needs BACKBONE_INTEGRATION=1 and TEST_DATABASE_URL"))
struct CatalogRedeliveryTests {
    let projection = CatalogProjection(requestsTopic: "t.requests", feedHalfLife: .seconds(86_400))

    func status(_ status: RoomVersionStatus, stage: String? = nil, at seconds: Double) -> CatalogProjection.Event {
        .status(RoomTranscodeStatus(
            roomId: "room-1", versionId: "room-1-v1", ownerUserId: "owner-1", visibility: .public, status: status, stage: stage,
            manifestKey: status == .ready ? "rooms/room-1/room-1-v1/manifest.json" : nil, qualityGrade: status == .ready ? "A" : nil,
            code: status == .failed ? .roomTranscodeFailed : nil, reason: status == .failed ? "bad package" : nil,
            at: Date(timeIntervalSince1970: 1_780_000_000 + seconds)))
    }

    /// Applies `events` in batches of `batchSize`, one transaction each; returns status, stage,
    /// attempts and grade as the catalog's version endpoint reads them.
    func apply(_ events: [CatalogProjection.Event], batchSize: Int, to client: PostgresClient) async throws -> [String] {
        var offset: Int64 = 0
        for start in stride(from: 0, to: events.count, by: batchSize) {
            let batch = events[start..<min(events.count, start + batchSize)].map { event -> ProjectedEvent<CatalogProjection.Event> in
                offset += 1
                return ProjectedEvent(event: event, topic: "t.status", partition: 0, offset: offset)
            }
            try await client.withTransaction { connection in try await projection.apply(batch, in: connection) }
        }
        let row = try #require(try await client.query(CatalogStore.versionSelect(.live) + " WHERE v.version_id = 'room-1-v1'").first)
        return [try row.decode(String.self, "status"), try row.decode(String?.self, "stage") ?? "-",
                String(try row.decode(Int.self, "attempts")), try row.decode(String?.self, "quality_grade") ?? "-"]
    }

    @Test("a failed attempt, a retry that ends ready, then all of it again and an old status after the newest: ready, 2 attempts")
    func redelivered() async throws {
        let first = [status(.queued, at: 0), status(.transcoding, stage: "validating", at: 1), status(.failed, at: 2)]
        let retry = [status(.queued, at: 10), status(.transcoding, stage: "exporting", at: 11), status(.ready, at: 12)]
        let once = first + retry
        let expected = ["ready", "-", "2", "A"]
        for batchSize in [1, 2, 6] {
            let database = try await TestDatabase.create("catalog_redelivery")
            let client = database.client()
            _ = try await PostgresMigrator(migrations: TranscodeWorkerService.migrations, logger: .disabled).migrate(client)
            #expect(try await apply(once, batchSize: batchSize, to: client) == expected, "batches of \(batchSize)")
            // The outbox publishing everything again, and a stray repeat of an earlier status.
            #expect(try await apply(once + [status(.transcoding, stage: "exporting", at: 11), status(.queued, at: 0)],
                                    batchSize: batchSize, to: client) == expected, "repeats in batches of \(batchSize)")
            let feed = try await client.query("SELECT latest_status, state FROM catalog_rooms WHERE room_id = 'room-1'")
            #expect(try feed.first?.decode(String.self, "latest_status") == "ready")
            #expect(try feed.first?.decode(String.self, "state") == "published")
            await client.close()
            await database.drop()
        }
    }
}
