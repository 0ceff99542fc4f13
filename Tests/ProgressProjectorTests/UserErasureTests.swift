import Auth
import BackboneTestSupport
import Contracts
import Foundation
import Kafka
import Postgres
import ProgressProjector
import Projection
import ServiceLogging
import Synchronization
import Testing
import UserErasure

/// The shared erasure building block as the progress projector configures it, against a real
/// PostgreSQL: effectively-once erasure, erased users left out of every later batch, and an
/// erasure racing a batch of the same user's events.
@Suite("User erasure (progress projector)", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(1)))
struct UserErasureTests {
    static let t0 = Date(timeIntervalSince1970: 1_796_000_000)

    static func events(_ user: String, count: Int, from offset: Int64 = 0) -> [ProjectedEvent<ReadingEventRecord>] {
        (0..<count).map { i in
            let item = ReadingEventUploadItem(
                eventId: UUID().uuidString.lowercased(), clientSessionId: "s-\(user)", readingTargetType: .knowledgeSource,
                materialId: "m-\(i % 2)", eventType: .positionChanged, position: .page(i + 1, of: 50), activeSecondsDelta: 10,
                clientTimestamp: t0.addingTimeInterval(Double(i)), clientTimezoneOffsetMinutes: 0, sequence: i,
                platform: "ios", appVersion: "1")
            return ProjectedEvent(event: ReadingEventRecord(userId: user, receivedAt: t0, item: item), topic: Topics.readingEvents,
                                  partition: 0, offset: offset + Int64(i))
        }
    }

    static func deletion(_ user: String, request: String) -> [ProjectedEvent<UserDeletionRecord>] {
        [ProjectedEvent(event: UserDeletionRecord(requestId: request, userId: user, requestedAt: t0, purgeAt: t0),
                        topic: Topics.userDeletions, partition: 0, offset: 0)]
    }

    struct Fixture {
        let client: PostgresClient
        let progress: ReadingProgressProjection
        let erasure: UserErasureProjection

        func count(_ sql: String, _ binds: [any PostgresBindable] = []) async throws -> Int64 {
            try await client.query(sql, binds).first?.decode(Int64.self, 0) ?? -1
        }

        func rows(of user: String) async throws -> Int64 {
            try await count("""
                SELECT (SELECT count(*) FROM progress_event_log WHERE user_id = $1)
                     + (SELECT count(*) FROM reading_progress WHERE user_id = $1)
                     + (SELECT count(*) FROM progress_notify_outbox WHERE user_id = $1)
                """, [user])
        }
    }

    static func withFixture(_ body: (Fixture) async throws -> Void) async throws {
        // Never connects: only after-commit work would publish, and these tests run apply alone.
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: "127.0.0.1:9"), logger: .disabled)
        try await TestDatabase.with("erasure", maxConnections: 4) { client in
            _ = try await PostgresMigrator(migrations: ProgressProjectorService.migrations, logger: .disabled).migrate(client)
            let erased = ErasedUsers(service: ProgressErasure.service)
            let fixture = Fixture(
                client: client,
                progress: ReadingProgressProjection(producer: producer, database: client),
                erasure: UserErasureProjection(erasedUsers: erased, step: .sql(ProgressErasure.statements),
                                               outbox: UserErasureOutbox(service: erased.service, database: client, producer: producer,
                                                                         topic: Topics.userDeletionStatus),
                                               revoked: RevokedSubjects()))
            try await body(fixture)
        }
    }

    @Test("a deletion delivered twice erases once and confirms once; another user keeps everything; later events of the erased user are left out")
    func effectivelyOnce() async throws {
        try await Self.withFixture { f in
            _ = try await f.client.withTransaction { try await f.progress.apply(Self.events("gone", count: 6) + Self.events("stays", count: 4, from: 6), in: $0) }
            #expect(try await f.rows(of: "gone") > 0)
            let stays = try await f.rows(of: "stays")

            for _ in 0..<2 {
                _ = try await f.client.withTransaction { try await f.erasure.apply(Self.deletion("gone", request: "r-1"), in: $0) }
            }
            #expect(try await f.rows(of: "gone") == 0)
            #expect(try await f.rows(of: "stays") == stays)
            #expect(try await f.count("SELECT count(*) FROM erased_users WHERE service = 'progress-projector'") == 1)
            #expect(try await f.count("SELECT count(*) FROM user_erasure_outbox WHERE request_id = 'r-1'") == 1,
                    "one confirmation, however often the record comes")
            #expect(try await f.count("SELECT count(*) FROM erased_users WHERE user_hash = $1", [ErasedUsers.hash("gone")]) == 1)
            #expect(try await f.count("SELECT count(*) FROM erased_users WHERE user_hash = 'gone'") == 0, "listed by hash only")

            // A replay of the topic (the same events again) and new events bring nothing back.
            _ = try await f.client.withTransaction { try await f.progress.apply(Self.events("gone", count: 5, from: 20), in: $0) }
            #expect(try await f.rows(of: "gone") == 0)
        }
    }

    @Test("an erasure racing a batch of the same user's events leaves nothing of them, whichever commits first")
    func racingBatch() async throws {
        try await Self.withFixture { f in
            let batchStarted = Atomic<Bool>(false)
            // The batch holds its transaction open after writing; the erasure starts meanwhile.
            async let batch: Void = f.client.withTransaction { connection in
                _ = try await f.progress.apply(Self.events("racer", count: 8), in: connection)
                batchStarted.store(true, ordering: .releasing)
                try await Task.sleep(for: .milliseconds(400))
            }
            #expect(await Integration.eventually(timeout: .seconds(10), every: .milliseconds(10)) { batchStarted.load(ordering: .acquiring) })
            _ = try await f.client.withTransaction { try await f.erasure.apply(Self.deletion("racer", request: "r-2"), in: $0) }
            try await batch
            #expect(try await f.rows(of: "racer") == 0, "the erasure waited for the batch and deleted what it wrote")

            // The other order: a batch after the erasure is left out.
            _ = try await f.client.withTransaction { try await f.progress.apply(Self.events("racer", count: 3, from: 50), in: $0) }
            #expect(try await f.rows(of: "racer") == 0)
        }
    }
}
