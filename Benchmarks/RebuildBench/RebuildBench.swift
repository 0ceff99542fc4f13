import AnalyticsAggregator
import Auth
import BackboneCLI
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import Kafka
import Lifecycle
import Postgres
import ProgressProjector
import Projection
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime
import Synchronization

/// `rebuild-bench [EVENTS] [progress|analytics]` (500,000 events, progress)
///
/// In one run, on one PostgreSQL and one embedded broker:
/// (a) the live service (its projection runner, in process) consumes a pre-filled
///     `reading.events.v2` from the start — the live projection's own rate;
/// (b) with the service caught up and serving, `backbone rebuild <model>` (in process, as the
///     CLI runs it) re-projects the whole topic into the shadow and swaps it in — the
///     rebuild's rate.
/// GETs go through the service's router (database included), one every 2 ms, during (a),
/// while the service is idle, and during (b).
/// Uses `DATABASE_URL` when set, else a private cluster in a temporary directory.
@main
struct RebuildBench {
    static func main() async throws { try await run() }

    nonisolated static func run() async throws {
        let count = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 500_000
        let model = CommandLine.arguments.dropFirst(2).first ?? "progress"
        guard ["progress", "analytics"].contains(model) else { fatalError("model must be progress or analytics") }
        let logger = Logger(label: "rebuild-bench", level: .warning)
        let (url, privateCluster) = try await PrivatePostgresCluster.fromEnvironmentOrPrivate("rebuild-bench", logger: logger)
        let kafka = try EmbeddedKafkaCluster(brokers: 1)
        // The embedded broker keeps the last 5 MB of each partition: 64 partitions hold
        // about 700k events; the rebuild's own retention check refuses if any were dropped.
        try kafka.createTopic(Topics.readingEvents, partitions: 64)
        try kafka.createTopic(Topics.readingProgress, partitions: 6)
        let database = PostgresClient(configuration: PostgresConfiguration(url: url, maxConnections: 8), logger: logger)
        for table in ["reading_progress", "progress_event_log", "progress_notify_outbox", "consumer_offsets", "schema_migrations",
                      "analytics_events", "analytics_daily", "analytics_day_materials", "analytics_day_sessions", "analytics_completions",
                      "analytics_sessions", "analytics_users", "analytics_streak_runs", "analytics_streak_settings"] {
            _ = try await database.execute("DROP TABLE IF EXISTS \(table) CASCADE")
        }
        _ = try await database.execute("DROP SCHEMA IF EXISTS rebuild_\(model) CASCADE")
        _ = try await PostgresMigrator(migrations: ProjectionSchema.migrations + ProgressSchema.migrations + AnalyticsSchema.migrations,
                                       logger: logger).migrate(database)
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: kafka.bootstrapServers), logger: logger)

        // 1,000 users × 10 materials; sessions of 20 heartbeats with page positions, interleaved.
        let start = Date(timeIntervalSince1970: 1_796_000_000)
        print("pre-filling \(count) events …")
        for chunk in stride(from: 0, to: count, by: 5_000) {
            let records = try (chunk..<min(chunk + 5_000, count)).map { i -> KafkaProducerRecord in
                let session = i / 20
                let user = session % 1000, material = (session / 1000) % 10
                let item = ReadingEventUploadItem(
                    eventId: UUID().uuidString, clientSessionId: "s-\(user)-\(material)-\(session)", readingTargetType: .knowledgeSource,
                    materialId: "m-\(material)", knowledgeBaseId: "kb", eventType: i % 97 == 0 ? .markedAsRead : .heartbeat,
                    position: .page(1 + (i / 10_000) % 40, of: 40), activeSecondsDelta: 15,
                    clientTimestamp: start.addingTimeInterval(Double(i)), clientTimezoneOffsetMinutes: 480, sequence: i,
                    platform: "iOS", appVersion: "2.3.0")
                let event = ReadingEventRecord(userId: "user-\(user)", receivedAt: start, item: item)
                return KafkaProducerRecord(topic: Topics.readingEvents, key: Array(event.userId.utf8), value: try ContractCoding.encode(event))
            }
            for result in await producer.send(records) { _ = try result.get() }
        }

        // (a) the live service from the start of the topic.
        let secret = "rebuild-bench-secret-0123456789"
        let metrics = MetricsRegistry()
        let admin = try KafkaAdmin(bootstrapServers: kafka.bootstrapServers, logger: logger)
        let context = ServiceContext(
            name: "rebuild-bench",
            configuration: CommonConfiguration(kafkaBrokers: kafka.bootstrapServers, databaseURL: url, jwtSecret: secret, httpPort: 0, kafkaFetchWait: EmbeddedKafkaCluster.fetchWait),
            database: database, producer: producer, admin: admin, metrics: metrics, logger: logger)
        let group = model == "progress" ? ProgressConfiguration().groupID : AnalyticsConfiguration.defaultGroupID
        let parts = model == "progress" ? ProgressProjectorService(context: context).parts()
            : AnalyticsService(context: context, configuration: AnalyticsConfiguration()).parts()
        let live = Task {
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                for service in parts.background { tasks.addTask { try await service.run() } }
                try await tasks.waitForAll()
            }
        }
        // GETs through the service's router, as the HTTP server calls it.
        let router = parts.router
        let codec = JWTCodec(secret: secret)
        let requests: [HTTPRequest] = (0..<100).map { i in
            let user = "user-\(i * 7 % 1000)"
            let path = model == "progress" ? "/materials/m-\(i % 10)/reading-progress" : "/learning/history"
            return HTTPRequest(method: .get, path: path, query: model == "progress" ? [:] : ["limit": "20"],
                               headers: ["Authorization": "Bearer \(codec.issue(userID: user, ttl: 86_400))"])
        }
        let projecting = Flag()
        let liveReaders = Task { try await latencies(router, requests, while: { _ in !projecting.isSet }) }
        let liveStart = ContinuousClock.now
        var firstRecordAt: ContinuousClock.Instant?
        while true {
            let done = metrics.value("projection_records_total", labels: ["group": group]) ?? 0
            if done > 0 && firstRecordAt == nil { firstRecordAt = .now }
            if done >= Double(count) { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        let liveSeconds = seconds(ContinuousClock.now - (firstRecordAt ?? liveStart))
        projecting.set()
        let duringLive = try await liveReaders.value

        let idle = try await latencies(router, requests, while: { $0 < 5_000 })

        // (b) the rebuild, while GETs run back to back.
        setenv("DATABASE_URL", url, 1)
        setenv("KAFKA_BROKERS", kafka.bootstrapServers, 1)
        let rebuilding = Flag()
        let readers = Task { try await latencies(router, requests, while: { _ in !rebuilding.isSet }) }
        let rebuildStart = ContinuousClock.now
        let status = await BackboneCommand.main(arguments: ["rebuild", model])
        let rebuildSeconds = seconds(ContinuousClock.now - rebuildStart)
        rebuilding.set()
        let during = try await readers.value
        guard status == 0 else { throw BenchFailure(description: "backbone rebuild \(model) exited with \(status)") }
        let identical = await BackboneCommand.main(arguments: ["rebuild", model, "--dry-run", "--rows", "0"])

        print("")
        print("events                          \(count) (64 partitions), model \(model)")
        print(String(format: "live projection                 %9.0f events/s (%.1f s from its first commit)", Double(count) / liveSeconds, liveSeconds))
        print(String(format: "backbone rebuild %-14@ %9.0f events/s (%.1f s, group join, shadow creation and swap included)",
                     model as NSString, Double(count) / rebuildSeconds, rebuildSeconds))
        print(String(format: "rebuild / live                  %9.2f×", liveSeconds / rebuildSeconds))
        print("GET \(requests[0].path) (router + database, one every 2 ms):")
        print("  service idle, \(idle.count) requests:              \(summary(idle))")
        print("  during the live projection, \(duringLive.count) requests: \(summary(duringLive))")
        print("  during the rebuild, \(during.count) requests:         \(summary(during))")
        print("errors during the rebuild       \(during.filter { $0 < 0 }.count)")
        print("dry run after the rebuild       exit \(identical) (0 = identical to a projection of the topic)")

        live.cancel()
        _ = await live.result
        await producer.shutdown()
        await database.close()
        kafka.shutdown()
        await privateCluster?.stop()
    }

    /// Milliseconds of each GET (negative: an answer other than 200), one every 2 ms (a
    /// steady read load, the same in every phase) until `condition(count)` is false; at most
    /// 1,000,000.
    nonisolated static func latencies(_ router: Router, _ requests: [HTTPRequest], while condition: @Sendable (Int) -> Bool) async throws -> [Double] {
        var samples: [Double] = []
        while samples.count < 1_000_000, condition(samples.count) {
            let request = requests[samples.count % requests.count]
            let started = ContinuousClock.now
            let response = await router.respond(to: request)
            let ms = seconds(ContinuousClock.now - started) * 1000
            samples.append(response.status == .ok ? ms : -ms)
            try await Task.sleep(for: .milliseconds(2))
        }
        return samples
    }

    nonisolated static func summary(_ samples: [Double]) -> String {
        let sorted = samples.map(abs).sorted()
        guard !sorted.isEmpty else { return "none" }
        func p(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))] }
        return String(format: "p50 %.2f ms, p99 %.2f ms, max %.1f ms", p(0.5), p(0.99), sorted.last!)
    }

    nonisolated static func seconds(_ duration: Duration) -> Double {
        duration.timeInterval
    }
}

final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
}
