import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import Kafka
import Postgres
import ProgressProjector
@testable import Projection
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime
import Testing

@Suite("Stored positions over a replaced or trimmed broker (the progress projection as the read model)", .serialized, .timeLimit(.minutes(5)))
struct StoredPositionTests {
    /// Reading events for one user: `count` heartbeats of `seconds` each, ids from `seed`.
    static func events(count: Int, seconds: Int, seed: Int) -> [ReadingEventRecord] {
        let start = Date().addingTimeInterval(-3600)
        return (0..<count).map { i in
            let item = ReadingEventUploadItem(
                eventId: String(format: "00000000-0000-4000-8000-%06x%06x", seed, i), clientSessionId: "s-\(seed)",
                readingTargetType: .knowledgeSource, materialId: "material-\(i % 3)", knowledgeBaseId: "kb-1", eventType: .heartbeat,
                position: .page(1 + i % 10, of: 40), activeSecondsDelta: seconds, clientTimestamp: start.addingTimeInterval(Double(i)),
                clientTimezoneOffsetMinutes: 480, sequence: i + 1, platform: "iOS", appVersion: "2.3.0")
            return ReadingEventRecord(userId: "restart-user", receivedAt: start, item: item)
        }
    }

    static func totalSeconds(_ client: PostgresClient) async throws -> Int64 {
        try await client.query("SELECT COALESCE(SUM(total_active_seconds), 0)::bigint AS n FROM reading_progress WHERE user_id = 'restart-user'")
            .first?.decode(Int64.self, "n") ?? 0
    }

    /// One broker's life: a fresh embedded cluster, `events` produced, the projector run
    /// against `database` until the read model holds `expectedSeconds`.
    /// `events` as records of `topic` (keyed by material).
    static func send(_ events: [ReadingEventRecord], to topic: String, through producer: KafkaProducer) async throws {
        let records = try events.map { KafkaProducerRecord(topic: topic, key: Array($0.materialId.utf8), value: try ContractCoding.encode($0)) }
        for result in await producer.send(records) { _ = try result.get() }
    }

    /// The progress projector's runner on `topic` (its progress and dead-letter topics beside it) of `cluster`.
    static func projector(_ cluster: EmbeddedKafkaCluster, topic: String, group: String, database: TestDatabase, client: PostgresClient,
                          producer: KafkaProducer, admin: KafkaAdmin, metrics: MetricsRegistry)
        -> ProjectionRunner<ReadingProgressProjection> {
        let context = ServiceContext(
            name: "progress-projector",
            configuration: CommonConfiguration(kafkaBrokers: cluster.bootstrapServers, databaseURL: database.url,
                                               jwtSecret: "restart-secret-0123456789abcdef", httpPort: 0, kafkaFetchWait: EmbeddedKafkaCluster.fetchWait,
                                               kafkaClusterIdentity: EmbeddedKafkaCluster.clusterIdentity),
            database: client, producer: producer, admin: admin, metrics: metrics, logger: .disabled)
        return ProgressProjectorService(
            context: context,
            configuration: ProgressConfiguration(eventsTopic: topic, progressTopic: topic + ".progress", groupID: group)).makeRunner()
    }

    static func brokerLife(database: TestDatabase, client: PostgresClient, events: [ReadingEventRecord], metrics: MetricsRegistry,
                           expectedSeconds: Int64) async throws -> (cluster: String?, reached: Bool) {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        for topic in ["restart.events", "restart.events.progress", "restart.events.dlq"] { try cluster.createTopic(topic, partitions: 3) }
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers), logger: .disabled)
        let admin = try KafkaAdmin(bootstrapServers: cluster.bootstrapServers, logger: .disabled)
        try await send(events, to: "restart.events", through: producer)
        let runner = projector(cluster, topic: "restart.events", group: "g-restart", database: database, client: client,
                               producer: producer, admin: admin, metrics: metrics)
        let task = Task { try await runner.run() }
        let reached = try await Integration.eventually(timeout: .seconds(60)) { try await totalSeconds(client) == expectedSeconds }
        task.cancel()
        _ = await task.result
        let id = EmbeddedKafkaCluster.clusterIdentity.identity(of: try await admin.clusterID(), bootstrapServers: cluster.bootstrapServers)
        await producer.shutdown()
        return (id, reached)
    }

    @Test("""
        records the broker removed while the projection was behind (a lock held its writes) are counted and logged as \
        skipped, not passed over in silence
        """, .enabled(if: Integration.isEnabled))
    func skippedWhileRunning() async throws {
        let database = try await TestDatabase.create("skipped_records")
        let client = database.client()
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers), logger: .disabled)
        let admin = try KafkaAdmin(bootstrapServers: cluster.bootstrapServers, logger: .disabled)
        let metrics = MetricsRegistry()
        var task: Task<Void, any Error>?
        do {
            _ = try await PostgresMigrator(migrations: ProgressProjectorService.migrations, logger: .disabled).migrate(client)
            for topic in ["gap.events", "gap.events.progress", "gap.events.dlq"] { try cluster.createTopic(topic, partitions: 1) }
            func send(_ events: [ReadingEventRecord]) async throws { try await Self.send(events, to: "gap.events", through: producer) }
            let runner = Self.projector(cluster, topic: "gap.events", group: "g-gap", database: database, client: client,
                                        producer: producer, admin: admin, metrics: metrics)
            task = Task { try await runner.run() }
            // A first few applied: the partition has a stored position.
            try await send(Self.events(count: 10, seconds: 1, seed: 20))
            #expect(try await Integration.eventually(timeout: .seconds(60)) { try await Self.totalSeconds(client) == 10 })
            // Its writes held by a lock, the projection falls behind while ~90 MB arrive: more than it
            // prefetches (its buffer of 10,000 records and librdkafka's queue; 80,000 records were
            // not) and than the broker's 5 MB.
            let more = Self.events(count: 200_000, seconds: 1, seed: 21)
            try await client.withTransaction { connection in
                try await connection.execute("LOCK TABLE progress_event_log IN ACCESS EXCLUSIVE MODE")
                for start in stride(from: 0, to: more.count, by: 2_000) { try await send(Array(more[start..<start + 2_000])) }
            }
            let marks = try await admin.watermarks(topic: "gap.events", partition: 0)
            #expect(marks.high == 200_010 && marks.low > 10, "the broker dropped records the projection had not read: \(marks)")
            let caughtUp = try await Integration.eventually(timeout: .seconds(90)) {
                try await client.query("SELECT next_offset FROM consumer_offsets WHERE group_id = 'g-gap'").first?.decode(Int64.self, "next_offset") == marks.high
            }
            #expect(caughtUp)
            let applied = try await client.query("SELECT count(*)::bigint AS n FROM progress_event_log").first?.decode(Int64.self, "n") ?? 0
            let line = metrics.render().split(separator: "\n").first { $0.hasPrefix(#"projection_records_skipped_total{group="g-gap"}"#) }
            let skipped = line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }.map { Int64($0) } ?? 0
            #expect(skipped > 0, "the gap is counted (applied \(applied), \(marks))")
            #expect(applied + skipped == marks.high, "applied \(applied) + skipped \(skipped) account for every offset")
        } catch {
            Issue.record(error)
        }
        task?.cancel()
        _ = await task?.result
        await producer.shutdown()
        cluster.shutdown()
        await client.close()
        await database.drop()
    }

    @Test("backbone dev restarted in the same folder: the new broker's events are applied, not skipped below the old positions",
          .enabled(if: Integration.isEnabled))
    func newClusterSameDatabase() async throws {
        let database = try await TestDatabase.create("stored_positions")
        let client = database.client()
        _ = try await PostgresMigrator(migrations: ProgressProjectorService.migrations, logger: .disabled).migrate(client)
        let metrics = MetricsRegistry()

        // First life: 300 events stored positions of about 100 per partition.
        let first = try await Self.brokerLife(database: database, client: client, events: Self.events(count: 300, seconds: 2, seed: 1),
                                              metrics: metrics, expectedSeconds: 600)
        #expect(first.reached)
        // Second life, same database, a new broker: 30 new events (fewer than the positions
        // stored) and then 400 more (more than them) must all count.
        let second = try await Self.brokerLife(database: database, client: client, events: Self.events(count: 30, seconds: 5, seed: 2),
                                               metrics: metrics, expectedSeconds: 750)
        #expect(second.reached, "events of the restarted broker were skipped")
        let third = try await Self.brokerLife(database: database, client: client, events: Self.events(count: 400, seconds: 1, seed: 3),
                                              metrics: metrics, expectedSeconds: 1_150)
        #expect(third.reached, "events of the third broker were skipped")
        #expect(try await Self.totalSeconds(client) == 1_150, "nothing counted twice")
        let resets = metrics.render().split(separator: "\n").filter { $0.hasPrefix("projection_offset_resets_total{") }
        #expect(!resets.isEmpty, "the resets are counted")
        let bound = try await client.query("SELECT DISTINCT cluster_id FROM consumer_offsets WHERE group_id = 'g-restart'")
            .map { try $0.decode(String?.self, "cluster_id") }
        #expect(bound == [third.cluster], "positions are bound to the cluster they were stored against")
        // … and the partitions say the model holds records their topic no longer has (what
        // `backbone rebuild` refuses to drop without --allow-gaps).
        let lost = try await client.query("""
            SELECT count(*)::bigint AS n FROM consumer_offsets WHERE group_id = 'g-restart' AND history_lost_at IS NOT NULL
            """).first?.decode(Int64.self, "n")
        #expect(lost.map { $0 > 0 } == true, "history_lost_at is set on the re-read partitions")
        await client.close()
        await database.drop()
    }
}
