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
import Testing

/// A running progress projector (the real service's runner) against an embedded broker and
/// a real database, and `backbone offsets|dlq` run as an operator runs them.
final class LiveProjector: BrokerAndDatabase, @unchecked Sendable {
    let metrics = MetricsRegistry()
    let topic: String
    let group: String
    let partitions: Int32 = 3

    init(_ name: String) async throws {
        topic = "\(name).events"
        group = "g-\(name)"
        try await super.init(databasePrefix: "cli_\(name)", migrations: ProgressProjectorService.migrations)
        for t in [topic, topic + ".progress", topic + ".dlq"] { try cluster.createTopic(t, partitions: partitions) }
    }

    var environment: [String: String] { ["KAFKA_BROKERS": cluster.bootstrapServers, "DATABASE_URL": database.url] }

    /// Starts the projector; cancel the task to stop it.
    func start() -> Task<Void, any Error> {
        let context = ServiceContext(
            name: "progress-projector",
            configuration: CommonConfiguration(kafkaBrokers: cluster.bootstrapServers, databaseURL: database.url,
                                               jwtSecret: "cli-offsets-secret-0123456789abcdef", httpPort: 0, kafkaFetchWait: EmbeddedKafkaCluster.fetchWait),
            database: client, producer: producer, admin: admin, metrics: metrics, logger: .disabled)
        let runner = ProgressProjectorService(
            context: context,
            configuration: ProgressConfiguration(eventsTopic: topic, progressTopic: topic + ".progress", groupID: group)).makeRunner()
        return Task { try await runner.run() }
    }

    /// Heartbeats of `user`, `seconds` each, with ids from `seed`.
    static func events(user: String, count: Int, seconds: Int, seed: Int) -> [ReadingEventRecord] {
        let start = Date().addingTimeInterval(-3600)
        return (0..<count).map { i in
            let item = ReadingEventUploadItem(
                eventId: String(format: "00000000-0000-4000-8000-%06x%06x", seed, i), clientSessionId: "s-\(seed)",
                readingTargetType: .knowledgeSource, materialId: "material-\(i % 4)", knowledgeBaseId: "kb-1", eventType: .heartbeat,
                position: .page(1 + i % 10, of: 40), activeSecondsDelta: seconds, clientTimestamp: start.addingTimeInterval(Double(i)),
                clientTimezoneOffsetMinutes: 480, sequence: i + 1, platform: "iOS", appVersion: "2.3.0")
            return ReadingEventRecord(userId: "\(user)-\(i % 5)", receivedAt: start, item: item)
        }
    }

    func produce(_ events: [ReadingEventRecord], headers: [KafkaHeader] = []) async throws {
        let records = try events.map {
            KafkaProducerRecord(topic: topic, key: Array($0.userId.utf8), value: try ContractCoding.encode($0), headers: headers)
        }
        for result in await producer.send(records) { _ = try result.get() }
    }

    func highWatermarks(_ name: String? = nil) async throws -> Int64 {
        var total: Int64 = 0
        for p in 0..<partitions { total += try await admin.watermarks(topic: name ?? topic, partition: p).high }
        return total
    }

    /// Every stored position at its partition's high watermark, taken by a running member.
    func caughtUp() async throws -> Bool {
        let rows = try await client.query("""
            SELECT COALESCE(SUM(GREATEST(next_offset, 0)), 0)::bigint AS n, bool_and(owner <> 'backbone offsets reset') AS taken
            FROM consumer_offsets WHERE group_id = $1 AND topic = $2
            """, [group, topic])
        guard let row = rows.first else { return false }
        return try row.decode(Int64.self, "n") == (try await highWatermarks()) && (try row.decode(Bool?.self, "taken") ?? false)
    }

    /// Records the projector consumed and committed (its `projection_records_total`).
    var recordsProjected: Double {
        metrics.render().split(separator: "\n").first { $0.hasPrefix("projection_records_total{group=\"\(group)\"}") }
            .flatMap { $0.split(separator: " ").last }.flatMap { Double($0) } ?? 0
    }

    func readModel() async throws -> [String] {
        try await client.query("""
            SELECT concat_ws('|', user_id, material_id, status, last_position::text, progress_percent, total_active_seconds,
                   first_read_at, last_read_at, completed_at, last_session_id) AS line
            FROM reading_progress ORDER BY user_id, material_id
            """).map { try $0.decode(String.self, "line") }
    }

    func cli(_ arguments: [String]) async throws -> CLIProcess.Outcome {
        try await CLIProcess.run(arguments, environment: environment)
    }

    static func json(_ lines: [String]) throws -> [[String: Any]] {
        try lines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }
}

@Suite("backbone offsets: stored positions listed and moved under a running projector", .serialized, .timeLimit(.minutes(3)),
       .enabled(if: Integration.isEnabled))
struct OffsetsCommandTests {
    @Test("offsets lists every stored position with the partition's watermarks and the lag; an unknown group names the groups")
    func listing() async throws {
        let live = try await LiveProjector("offlist")
        let task = live.start()
        try await live.produce(LiveProjector.events(user: "u", count: 60, seconds: 2, seed: 1))
        #expect(try await Integration.eventually { try await live.caughtUp() })
        task.cancel()
        _ = await task.result
        try await live.produce(LiveProjector.events(user: "u", count: 9, seconds: 2, seed: 2))

        let outcome = try await live.cli(["offsets", "--group", live.group])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let rows = try LiveProjector.json(outcome.lines)
        #expect(rows.count == 3)
        var lag = 0
        for row in rows {
            let partition = try #require(row["partition"] as? Int)
            let marks = try await live.admin.watermarks(topic: live.topic, partition: Int32(partition))
            #expect(row["topic"] as? String == live.topic)
            #expect(row["low"] as? Int == Int(marks.low))
            #expect(row["high"] as? Int == Int(marks.high))
            let position = try #require(row["position"] as? Int)
            #expect(row["lag"] as? Int == Int(marks.high) - max(position, 0))
            lag += row["lag"] as? Int ?? 0
        }
        #expect(lag == 9, "the 9 records produced while the projector was stopped are the lag")

        // With the service stopped, a reset says nobody took it over; the next start begins there.
        let skip = try await live.cli(["offsets", "reset", "--group", live.group, "--to", "latest", "--wait", "1"])
        #expect(skip.status == 0, "\(skip.stderr)")
        let skipped = try LiveProjector.json(skip.lines)
        #expect(skipped.count == 3 && skipped.allSatisfy { $0["takenOverBy"] is NSNull }, "\(skipped)")
        let restarted = live.start()
        try await live.produce(LiveProjector.events(user: "u", count: 3, seconds: 2, seed: 9))
        #expect(try await Integration.eventually { try await live.caughtUp() && live.recordsProjected >= 63 })
        #expect(live.recordsProjected == 63, "--to latest skipped the 9 records nobody had projected; the 3 new ones count")
        restarted.cancel()
        _ = await restarted.result

        let unknown = try await live.cli(["offsets", "--group", "no-such-group"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no stored positions") && unknown.stderr.contains(live.group), "\(unknown.stderr)")
        let help = try await live.cli(["offsets", "--help"])
        #expect(help.status == 0 && help.stdout.contains("examples:"))
        await live.close()
    }

    @Test("reset a live group to earliest: the running projector re-reads every partition and the read model ends identical")
    func resetLiveToEarliest() async throws {
        let live = try await LiveProjector("offearly")
        let task = live.start()
        try await live.produce(LiveProjector.events(user: "u", count: 120, seconds: 3, seed: 3))
        #expect(try await Integration.eventually { try await live.caughtUp() })
        let before = try await live.readModel()
        let projected = live.recordsProjected
        #expect(projected == 120)

        let outcome = try await live.cli(["offsets", "reset", "--group", live.group, "--to", "earliest"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let moves = try LiveProjector.json(outcome.lines)
        #expect(moves.count == 3)
        for move in moves {
            #expect(move["after"] as? Int == 0)
            #expect(move["takenOverBy"] is String, "the running projector took the partition over: \(move)")
        }
        #expect(moves.compactMap { $0["before"] as? Int }.reduce(0, +) == 120, "it printed where each partition was")
        #expect(try await Integration.eventually { try await live.caughtUp() && live.recordsProjected >= 240 },
                "every record was read again (\(live.recordsProjected) projected)")
        #expect(try await live.readModel() == before, "duplicates are harmless: the read model is unchanged")
        // The projector still projects what arrives after the reset.
        try await live.produce(LiveProjector.events(user: "late", count: 10, seconds: 1, seed: 4))
        #expect(try await Integration.eventually { try await live.caughtUp() })
        #expect(try await live.readModel().contains { $0.hasPrefix("late-") })
        task.cancel()
        _ = await task.result
        await live.close()
    }

    @Test("reset to a time: only the records produced after it are applied again")
    func resetToTime() async throws {
        let live = try await LiveProjector("offtime")
        let task = live.start()
        let early = LiveProjector.events(user: "early", count: 40, seconds: 2, seed: 5)
        let late = LiveProjector.events(user: "late", count: 30, seconds: 2, seed: 6)
        try await live.produce(early)
        try await Task.sleep(for: .milliseconds(300))
        let cut = Date()
        try await Task.sleep(for: .milliseconds(300))
        try await live.produce(late)
        #expect(try await Integration.eventually { try await live.caughtUp() })
        // Lose the read model (as a bad deploy would), then re-apply from the cut.
        _ = try await live.client.execute("DELETE FROM progress_event_log")
        _ = try await live.client.execute("DELETE FROM reading_progress")

        let outcome = try await live.cli(["offsets", "reset", "--group", live.group, "--to", ContractCoding.formatTimestamp(cut)])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let moves = try LiveProjector.json(outcome.lines)
        #expect(moves.compactMap { $0["high"] as? Int }.reduce(0, +) - moves.compactMap { $0["after"] as? Int }.reduce(0, +) == late.count,
                "each partition moved to its first record after the cut: \(moves)")
        #expect(try await Integration.eventually { try await live.caughtUp() })
        #expect(try await Integration.eventually {
            try await live.client.query("SELECT count(*)::bigint AS n FROM progress_event_log").first?.decode(Int64.self, "n") == 30
        })
        let applied = Set(try await live.client.query("SELECT event_id FROM progress_event_log").map { try $0.decode(String.self, "event_id") })
        #expect(applied == Set(late.map(\.eventId)), "only the later records were applied again")
        let users = Set(try await live.readModel().map { String($0.split(separator: "|")[0]) })
        #expect(users.allSatisfy { $0.hasPrefix("late-") } && !users.isEmpty)

        let gone = try await live.cli(["offsets", "reset", "--group", live.group, "--to", "100000"])
        #expect(gone.status == 1 && gone.stderr.contains("--to latest"), "\(gone.stderr)")
        task.cancel()
        _ = await task.result
        await live.close()
    }
}
