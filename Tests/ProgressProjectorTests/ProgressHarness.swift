import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import Kafka
import Postgres
import ProgressProjector
import Projection
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime

/// Realistic reading sessions: several users, materials and devices, each session an
/// `opened`, heartbeats with positions, sometimes `markedAsRead`, and `closed`.
enum ReadingStream {
    static func sessions(users: Int, materials: Int, sessionsPerPair: Int, seed: UInt64) -> [ReadingEventRecord] {
        var rng = SplitMix64(state: seed)
        var events: [ReadingEventRecord] = []
        let start = Date(timeIntervalSince1970: 1_796_000_000)
        for u in 0..<users {
            for m in 0..<materials {
                var clock = start.addingTimeInterval(Double(Int.random(in: 0..<3600, using: &rng)))
                var page = 1
                for s in 0..<sessionsPerPair {
                    let session = "s-\(u)-\(m)-\(s)"
                    var sequence = 0
                    func event(_ type: ReadingEventType, delta: Int, position: ReadingPosition?) -> ReadingEventRecord {
                        sequence += 1
                        clock = clock.addingTimeInterval(Double(Int.random(in: 1...20, using: &rng)))
                        let item = ReadingEventUploadItem(
                            eventId: UUID(uuidString: String(format: "00000000-0000-4000-8000-%012llx", rng.next() & 0xFFFF_FFFF_FFFF))!.uuidString,
                            clientSessionId: session, readingTargetType: .knowledgeSource, materialId: "material-\(m)",
                            knowledgeBaseId: "kb-1", eventType: type, position: position, activeSecondsDelta: delta,
                            clientTimestamp: clock, clientTimezoneOffsetMinutes: 480, sequence: sequence,
                            platform: s % 2 == 0 ? "iOS" : "iPadOS", appVersion: "2.3.0")
                        return ReadingEventRecord(userId: "user-\(u)", receivedAt: clock, item: item)
                    }
                    events.append(event(.opened, delta: 0, position: nil))
                    for _ in 0..<Int.random(in: 2...6, using: &rng) {
                        page = min(40, max(1, page + Int.random(in: -1...4, using: &rng)))
                        events.append(event(.heartbeat, delta: Int.random(in: 5...15, using: &rng), position: .page(page, of: 40)))
                    }
                    if Int.random(in: 0..<4, using: &rng) == 0 { events.append(event(.markedAsRead, delta: 1, position: nil)) }
                    if Int.random(in: 0..<3, using: &rng) == 0 {
                        events.append(event(.positionChanged, delta: 0, position: .fraction(Double(Int.random(in: 0...100, using: &rng)) / 100)))
                    }
                    events.append(event(.closed, delta: Int.random(in: 0...5, using: &rng), position: nil))
                }
            }
        }
        return events
    }

    /// The same events out of order, with repeats, as flaky networks and resends deliver them.
    static func disordered(_ events: [ReadingEventRecord], seed: UInt64) -> [ReadingEventRecord] {
        var rng = SplitMix64(state: seed)
        var result = events.shuffled(using: &rng)
        for _ in 0..<(events.count / 5) { result.insert(events.randomElement(using: &rng)!, at: Int.random(in: 0...result.count, using: &rng)) }
        return result
    }
}

/// One embedded broker and one database for a suite, and helpers to feed and read them.
final class ProgressHarness: BrokerAndDatabase, @unchecked Sendable {
    let secret = "progress-test-secret-0123456789"

    init(databasePrefix: String) async throws {
        try await super.init(databasePrefix: databasePrefix, migrations: ProgressProjectorService.migrations)
    }

    func createTopics(_ names: [String], partitions: Int32 = 6) throws {
        for name in names { try cluster.createTopic(name, partitions: partitions) }
    }

    func produce(_ events: [ReadingEventRecord], to topic: String) async throws {
        let records = try events.map { KafkaProducerRecord(topic: topic, key: Array($0.userId.utf8), value: try ContractCoding.encode($0)) }
        for chunk in stride(from: 0, to: records.count, by: 1000) {
            for result in await producer.send(Array(records[chunk..<min(chunk + 1000, records.count)])) { _ = try result.get() }
        }
    }

    func produceRaw(_ values: [[UInt8]], key: String, to topic: String) async throws {
        for result in await producer.send(values.map { KafkaProducerRecord(topic: topic, key: Array(key.utf8), value: $0) }) {
            _ = try result.get()
        }
    }

    func context(port: Int = 0, client other: PostgresClient? = nil) -> ServiceContext {
        let configuration = CommonConfiguration(kafkaBrokers: cluster.bootstrapServers, databaseURL: database.url,
                                                jwtSecret: secret, httpPort: port, kafkaFetchWait: EmbeddedKafkaCluster.fetchWait)
        return ServiceContext(name: "progress-projector", configuration: configuration, database: other ?? client, producer: producer,
                              admin: admin, metrics: MetricsRegistry(), logger: .disabled)
    }

    /// True once the group's stored offsets reach every partition's high watermark.
    func caughtUp(group: String, topic: String, partitions: Int32 = 6, client other: PostgresClient? = nil) async throws -> Bool {
        let client = other ?? self.client
        var total: Int64 = 0
        for p in 0..<partitions { total += try await admin.watermarks(topic: topic, partition: p).high }
        let rows = try await client.query("""
            SELECT COALESCE(SUM(GREATEST(next_offset, 0)), 0)::bigint AS n FROM consumer_offsets WHERE group_id = $1 AND topic = $2
            """, [group, topic])
        return try rows.first?.decode(Int64.self, "n") == total
    }

    /// The whole read model as comparable text (everything but bookkeeping columns).
    func progressDump(client other: PostgresClient? = nil) async throws -> [String] {
        try await (other ?? client).query("""
            SELECT concat_ws('|', user_id, material_id, status, last_position::text, progress_percent, total_active_seconds,
                   first_read_at, last_read_at, completed_at, last_session_id, reading_target_type, knowledge_base_id) AS line
            FROM reading_progress ORDER BY user_id, material_id
            """).map { try $0.decode(String.self, "line") }
    }

    /// Every record of `topic` (up to its high watermarks), in offset order per partition.
    func consumeAll(_ topic: String, partitions: Int32 = 6) async throws -> [KafkaConsumerRecord] {
        var total: Int64 = 0
        for p in 0..<partitions { total += try await admin.watermarks(topic: topic, partition: p).high }
        return try await TopicReader.read(topic, bootstrapServers: cluster.bootstrapServers, count: Int(total))
    }

    /// The last `reading.progress.v1` notification of each (user, material), as `progressDump`-like text.
    func lastNotifications(_ topic: String) async throws -> [String: ReadingProgressChanged] {
        var last: [String: ReadingProgressChanged] = [:]
        for record in try await consumeAll(topic) {
            let change = try ContractCoding.decode(ReadingProgressChanged.self, from: record.value)
            last[change.userId + "|" + change.materialId] = change
        }
        return last
    }

    /// `reading_progress` as the notification a row's state would give.
    func progressStates(client other: PostgresClient? = nil) async throws -> [String: ReadingProgressChanged] {
        var states: [String: ReadingProgressChanged] = [:]
        for row in try await (other ?? client).query("""
            SELECT user_id, material_id, status, last_position, progress_percent, total_active_seconds, last_read_at,
                   last_session_id, 0::bigint AS version, NULL::text AS traceparent
            FROM reading_progress
            """) {
            let change = try ProgressNotification(row: row).change
            states[change.userId + "|" + change.materialId] = change
        }
        return states
    }

    func reset() async throws {
        _ = try await client.execute("TRUNCATE reading_progress, progress_event_log, progress_notify_outbox, consumer_offsets")
    }
}
