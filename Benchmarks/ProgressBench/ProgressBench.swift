import Auth
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import Ingest
import Kafka
import Lifecycle
import Postgres
import ProgressProjector
import Projection
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime
import Settings

/// `swift run -c release progress-bench [EVENTS] [BATCH_RECORDS]` (100,000 events, batches of up to 2,000)
///
/// Pre-fills a topic with reading events, then in the same run measures
/// (a) a plain PostgreSQL COPY of the same rows into a table shaped like the event log —
///     the floor of what writing them costs — and
/// (b) the progress projection consuming the topic from the start through the projection
///     runner (event log + reading_progress + offsets, one transaction per batch).
/// Uses `DATABASE_URL` when set, else a private cluster in a temporary directory.
@main
struct ProgressBench {
    static func main() async throws { try await run() }

    nonisolated static func run() async throws {
        let count = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 100_000
        let batchRecords = CommandLine.arguments.dropFirst(2).first.flatMap(Int.init) ?? ProgressConfiguration().maxBatchRecords
        let logger = Logger(label: "progress-bench", level: ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(name:)) ?? .warning)
        let (url, privateCluster) = try await PrivatePostgresCluster.fromEnvironmentOrPrivate("progress-bench", logger: logger)
        let kafka = try EmbeddedKafkaCluster(brokers: 1)
        // The embedded broker keeps the last 5 MB of each partition: 24 partitions hold
        // about 200k events.
        try kafka.createTopic("bench.events", partitions: 24)
        try kafka.createTopic("bench.events.progress", partitions: 6)
        let database = PostgresClient(configuration: PostgresConfiguration(url: url, maxConnections: 4), logger: logger)
        for table in ["reading_progress", "progress_event_log", "progress_notify_outbox", "consumer_offsets", "schema_migrations", "copy_baseline"] {
            _ = try await database.execute("DROP TABLE IF EXISTS \(table)")
        }
        _ = try await PostgresMigrator(migrations: ProgressProjectorService.migrations, logger: logger).migrate(database)
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: kafka.bootstrapServers), logger: logger)

        // 1,000 users × 10 materials; each reading session is a run of 20 heartbeats with
        // page positions (as the app sends them every 15 s), sessions of different users interleaved.
        let start = Date(timeIntervalSince1970: 1_796_000_000)
        let events: [ReadingEventRecord] = (0..<count).map { i in
            let session = i / 20
            let user = session % 1000, material = (session / 1000) % 10
            let item = ReadingEventUploadItem(
                eventId: UUID().uuidString, clientSessionId: "s-\(user)-\(material)", readingTargetType: .knowledgeSource,
                materialId: "m-\(material)", knowledgeBaseId: "kb", eventType: .heartbeat,
                position: .page(1 + (i / 10_000) % 40, of: 40), activeSecondsDelta: 15,
                clientTimestamp: start.addingTimeInterval(Double(i)), clientTimezoneOffsetMinutes: 480, sequence: i,
                platform: "iOS", appVersion: "2.3.0")
            return ReadingEventRecord(userId: "user-\(user)", receivedAt: start, item: item)
        }
        print("pre-filling \(count) events …")
        let records = try events.map { KafkaProducerRecord(topic: "bench.events", key: Array($0.userId.utf8), value: try ContractCoding.encode($0)) }
        for chunk in stride(from: 0, to: records.count, by: 5000) {
            for result in await producer.send(Array(records[chunk..<min(chunk + 5000, records.count)])) { _ = try result.get() }
        }

        // For reference: the cost of decoding every record's JSON alone.
        let decodeStart = ContinuousClock.now
        for record in records { _ = try ReadingEventRecord(json: record.value) }
        let decodeSeconds = seconds(ContinuousClock.now - decodeStart)

        // (a) COPY baseline: the same rows into an event-log-shaped table (measured again
        //     after the projection, and averaged: the machine's load drifts).
        func copyBaseline(_ table: String) async throws -> Double {
            _ = try await database.execute("DROP TABLE IF EXISTS \(table)")
            _ = try await database.execute("CREATE TABLE \(table) (LIKE progress_event_log INCLUDING ALL)")
            let rows: [[any PostgresBindable]] = events.enumerated().map { i, e in
                [e.eventId, e.userId, e.materialId, e.clientSessionId, e.eventType.rawValue, e.clientTimestamp, e.sequence,
                 e.activeSecondsDelta, i % 6, Int64(i), Date()]
            }
            let copyStart = ContinuousClock.now
            _ = try await database.withConnection { connection in
                try await connection.copy(into: table, columns: [
                    "event_id", "user_id", "material_id", "client_session_id", "event_type", "client_timestamp", "sequence",
                    "active_seconds_delta", "kafka_partition", "kafka_offset", "projected_at"], rows: rows)
            }
            let elapsed = seconds(ContinuousClock.now - copyStart)
            _ = try await database.execute("DROP TABLE \(table)")
            return elapsed
        }
        let copyBefore = try await copyBaseline("copy_baseline")

        // (a') the projection's apply alone, batch by batch in transactions (no Kafka, no
        //      decoding, no offsets, no publishing): what the SQL write path costs.
        let applyBatch = batchRecords
        let alone = ReadingProgressProjection(producer: producer, database: database, progressTopic: "bench.events.progress")
        let projected = events.enumerated().map { i, e in ProjectedEvent(event: e, topic: "bench.events", partition: Int32(i % 24), offset: Int64(i)) }
        var applyBatchSeconds: [Double] = []
        let applyStart = ContinuousClock.now
        for chunk in stride(from: 0, to: projected.count, by: applyBatch) {
            let batch = Array(projected[chunk..<min(chunk + applyBatch, projected.count)])
            let started = ContinuousClock.now
            _ = try await database.withConnection { connection in
                try await connection.withTransaction { try await alone.apply(batch, in: $0) }
            }
            applyBatchSeconds.append(seconds(ContinuousClock.now - started))
        }
        let applySeconds = seconds(ContinuousClock.now - applyStart)
        applyBatchSeconds.sort()
        _ = try await database.execute("TRUNCATE progress_event_log, reading_progress, progress_notify_outbox")

        // (b) the projection from the start of the topic.
        let admin = try KafkaAdmin(bootstrapServers: kafka.bootstrapServers, logger: logger)
        let metrics = MetricsRegistry()
        let context = ServiceContext(
            name: "progress-bench",
            configuration: CommonConfiguration(kafkaBrokers: kafka.bootstrapServers, databaseURL: url, jwtSecret: "bench-secret-0123456789", httpPort: 0, kafkaFetchWait: EmbeddedKafkaCluster.fetchWait),
            database: database, producer: producer, admin: admin, metrics: metrics, logger: logger)
        let runner = ProgressProjectorService(context: context, configuration: ProgressConfiguration(
            eventsTopic: "bench.events", progressTopic: "bench.events.progress", groupID: "bench", maxBatchRecords: batchRecords)).makeRunner()
        let projectStart = ContinuousClock.now
        let task = Task { try await runner.run() }
        var firstRecordAt: ContinuousClock.Instant?
        // Progress from the runner's committed-records counter (polling the database would
        // compete with the projection for the same two cores).
        while true {
            let done = metrics.value("projection_records_total", labels: ["group": "bench"]) ?? 0
            if done > 0 && firstRecordAt == nil { firstRecordAt = .now }
            if done >= Double(count) { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        let projectEnd = ContinuousClock.now
        task.cancel()
        _ = await task.result
        let logged = try await database.query("SELECT count(*)::bigint AS n FROM progress_event_log").first!.decode(Int64.self, "n")
        guard logged == Int64(count) else { throw BenchFailure(description: "event log holds \(logged) of \(count) events") }
        let projectSeconds = seconds(projectEnd - (firstRecordAt ?? projectStart))
        let joinSeconds = seconds((firstRecordAt ?? projectStart) - projectStart)

        // (b') the same run with decoding taken out: records are looked up pre-decoded, so
        //      what is left is Kafka, the write path, offsets and publishing.
        _ = try await database.execute("TRUNCATE progress_event_log, reading_progress, progress_notify_outbox")
        var predecoded: [[UInt8]: ReadingEventRecord] = [:]
        for (record, event) in zip(records, events) { predecoded[record.value] = event }
        let lookupMetrics = MetricsRegistry()
        let lookupRunner = ProjectionRunner(
            projection: PredecodedProjection(inner: ReadingProgressProjection(producer: producer, database: database, progressTopic: "bench.events.progress"),
                                             events: predecoded),
            configuration: ProjectionRunnerConfiguration(bootstrapServers: kafka.bootstrapServers, groupID: "bench-predecoded",
                                                         topics: ["bench.events"], maxBatchRecords: batchRecords, maxBatchWait: .milliseconds(20),
                                                         consumerProperties: context.configuration.kafkaConsumerProperties),
            database: database, deadLetters: producer, metrics: lookupMetrics, logger: logger)
        let lookupTask = Task { try await lookupRunner.run() }
        var lookupFirst: ContinuousClock.Instant?
        while true {
            let done = lookupMetrics.value("projection_records_total", labels: ["group": "bench-predecoded"]) ?? 0
            if done > 0 && lookupFirst == nil { lookupFirst = .now }
            if done >= Double(count) { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        let lookupSeconds = seconds(ContinuousClock.now - lookupFirst!)
        lookupTask.cancel()
        _ = await lookupTask.result

        let copyAfter = try await copyBaseline("copy_baseline")
        let copySeconds = (copyBefore + copyAfter) / 2
        let copyRate = Double(count) / copySeconds
        let projectRate = Double(count) / projectSeconds
        print("")
        print("events                         \(count)")
        print(String(format: "COPY baseline (event rows)     %10.0f rows/s   (%.2f s; %.2f s before, %.2f s after the projection)",
                     copyRate, copySeconds, copyBefore, copyAfter))
        print(String(format: "projection (log+progress+offs) %10.0f events/s (%.2f s, after %.1f s group join)", projectRate, projectSeconds, joinSeconds))
        let batches = metrics.value("projection_batch_seconds", labels: ["group": "bench"]) ?? 0
        print(String(format: "batches                        %10.0f (%.0f events each)", batches, Double(count) / max(1, batches)))
        print(metrics.render().split(separator: "\n").filter { $0.hasPrefix("projection_stage_seconds_sum") || $0.hasPrefix("projection_batch_seconds_sum") }.joined(separator: "\n"))
        print(String(format: "apply alone (SQL write path)   %10.0f events/s (%.2f s; per %d-event batch: median %.1f ms, p90 %.1f ms) = %.1f %% of COPY",
                     Double(count) / applySeconds, applySeconds, applyBatch, 1000 * applyBatchSeconds[applyBatchSeconds.count / 2],
                     1000 * applyBatchSeconds[applyBatchSeconds.count * 9 / 10], 100 * Double(count) / applySeconds / copyRate))
        print(String(format: "projection, decoding excluded  %10.0f events/s (%.2f s) = %.1f %% of COPY",
                     Double(count) / lookupSeconds, lookupSeconds, 100 * Double(count) / lookupSeconds / copyRate))
        print(lookupMetrics.render().split(separator: "\n").filter { $0.hasPrefix("projection_stage_seconds_sum") || $0.hasPrefix("projection_batch_seconds_count") }.joined(separator: "\n"))
        print(String(format: "JSON decode alone              %10.0f events/s", Double(count) / decodeSeconds))
        print(String(format: "projection / COPY              %9.1f %%", 100 * projectRate / copyRate))

        try await endToEndLatency(context: context, kafka: kafka, database: database)

        await producer.shutdown()
        await database.close()
        kafka.shutdown()
        await privateCluster?.stop()
    }

    /// (c) End to end at a steady moderate rate: each batch of 10 events is POSTed to ingest
    /// (its HTTP handler, in process), and the clock stops when `GET reading-progress` for the
    /// batch's material shows its last event — through Kafka, the runner and PostgreSQL.
    nonisolated static func endToEndLatency(context: ServiceContext, kafka: EmbeddedKafkaCluster, database: PostgresClient) async throws {
        let rounds = 300, perSecond = 20
        try kafka.createTopic(Topics.readingEvents, partitions: 6)
        try kafka.createTopic(Topics.readingProgress, partitions: 6)
        _ = try await PostgresMigrator(migrations: IngestSchema.migrations, logger: .disabled).migrate(database)
        var env = EnvironmentReader([:])
        var ingestConfiguration = IngestConfiguration.read(from: &env)
        ingestConfiguration.rateLimitPerSecond = 1000
        ingestConfiguration.rateLimitBurst = 1000
        let ingest = IngestService(context: context, configuration: ingestConfiguration).parts().router
        let progress = ProgressProjectorService(context: context, configuration: ProgressConfiguration(groupID: "bench-e2e"))
        let runner = progress.makeRunner()
        let reads = progress.router()
        let task = Task { try await runner.run() }
        let codec = context.authenticator.codec
        let service = codec.issue(userID: "catalog", role: "service")
        let put = await ingest.respond(to: HTTPRequest(method: .put, path: "/materials/e2e", headers: ["Authorization": "Bearer " + service],
                                                       body: Array(#"{"readingTargetType":"knowledgeSource"}"#.utf8)))
        guard put.status.rawValue < 300 else { throw BenchFailure(description: "material registration failed: \(put.status)") }
        try await Task.sleep(for: .seconds(4))  // consumer-group join

        var latencies: [Double] = []
        let start = Date().addingTimeInterval(-Double(rounds * 10 + 60))  // client clocks in the recent past
        for round in 0..<rounds {
            let user = "e2e-user-\(round % 50)"
            let token = codec.issue(userID: user)
            let items = (0..<10).map { i in
                ReadingEventUploadItem(eventId: UUID().uuidString, clientSessionId: "s-\(round)", readingTargetType: .knowledgeSource,
                                       materialId: "e2e", eventType: .heartbeat, position: .page(1 + i, of: 10),
                                       activeSecondsDelta: 1, clientTimestamp: start.addingTimeInterval(Double(round * 10 + i)),
                                       clientTimezoneOffsetMinutes: 0, sequence: round * 10 + i, platform: "iOS", appVersion: "1")
            }
            let body = try ContractCoding.encode(ReadingEventBatchRequest(events: items))
            let began = ContinuousClock.now
            let posted = await ingest.respond(to: HTTPRequest(method: .post, path: "/learning/reading-events/batch",
                                                              headers: ["Authorization": "Bearer " + token], body: body))
            guard posted.status == .ok else { throw BenchFailure(description: "POST answered \(posted.status)") }
            let wanted = ContractCoding.formatTimestamp(items[9].clientTimestamp)
            let accepted = try ContractCoding.decode(ReadingEventBatchResponse.self, from: posted.body).accepted
            guard accepted == 10 else { throw BenchFailure(description: "only \(accepted) of 10 events accepted") }
            while true {
                guard ContinuousClock.now - began < .seconds(30) else { throw BenchFailure(description: "progress not reflected within 30 s") }
                let got = await reads.respond(to: HTTPRequest(method: .get, path: "/materials/e2e/reading-progress",
                                                              headers: ["Authorization": "Bearer " + token]))
                if let p = try? ContractCoding.decode(ReadingProgressResponse.self, from: got.body),
                   let last = p.lastReadAt, ContractCoding.formatTimestamp(last) == wanted { break }
                try await Task.sleep(for: .milliseconds(1))
            }
            latencies.append(seconds(ContinuousClock.now - began) * 1000)
            let next = began + .milliseconds(1000 / perSecond)
            if ContinuousClock.now < next { try await Task.sleep(until: next) }
        }
        task.cancel()
        _ = await task.result
        latencies.sort()
        func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        print(String(format: "end to end POST → GET          p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d batches of 10 at %d/s)",
                     percentile(0.5), percentile(0.99), latencies.last ?? 0, rounds, perSecond))
    }

    struct BenchFailure: Error, CustomStringConvertible { let description: String }

    static func seconds(_ d: Duration) -> Double { d.timeInterval }
}

/// The progress projection with `decode` replaced by a lookup of the already-decoded event
/// (the bench's own records), to show what the rest of the pipeline sustains.
struct PredecodedProjection: Projection {
    let inner: ReadingProgressProjection
    let events: [[UInt8]: ReadingEventRecord]

    struct Missing: Error {}

    func decode(_ record: KafkaConsumerRecord) throws -> ReadingEventRecord {
        guard let event = events[record.value] else { throw Missing() }
        return event
    }

    func apply(_ events: [ProjectedEvent<ReadingEventRecord>], in connection: PostgresConnection) async throws -> [ProgressNotification] {
        try await inner.apply(events, in: connection)
    }

    func combine(_ effects: [[ProgressNotification]]) -> [[ProgressNotification]] { inner.combine(effects) }

    func afterCommit(_ effects: [ProgressNotification]) async throws { try await inner.afterCommit(effects) }
}
