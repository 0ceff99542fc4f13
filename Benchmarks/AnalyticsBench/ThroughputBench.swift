import AnalyticsAggregator
import Contracts
import DevInfrastructure
import Foundation
import Kafka
import Postgres
import Projection
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime

/// Events/s from a pre-filled topic through the projection runner into Postgres, against
/// baselines in the same run: a plain COPY of the same rows into a table shaped like the
/// event log (the floor of what merely storing them costs), and the same runner and records
/// with a projection that decodes each record but writes nothing (consume + decode + the
/// per-batch offset transaction).
struct ThroughputBench {
    let events: Int
    let batchSize: Int
    let database: PostgresClient

    struct Result {
        var produced: Int
        var batchSize: Int
        var copyRate: Double
        var copyBefore: Double
        var copyAfter: Double
        var baseline: Double
        var aggregated: Double
        var aggregateSeconds: Double
        var applyOnly: Double
        var report: String {
            String(format: """
                throughput (%d records, 24 partitions, batches of up to %d; steady state, the last 80%%):
                  COPY baseline (event rows)     %10.0f rows/s    (%.2f s before, %.2f s after the projections)
                  baseline: runner, decode only  %10.0f records/s
                  analytics projection           %10.0f events/s  (%.2f s, %.0f%% of the decode-only baseline)
                  analytics apply, no Kafka      %10.0f events/s  (the read model's own ceiling)
                  analytics projection / COPY    %9.1f %%
                """, produced, batchSize, copyRate, copyBefore, copyAfter, baseline, aggregated, aggregateSeconds,
                100 * aggregated / baseline, applyOnly, 100 * aggregated / copyRate)
        }
    }

    /// Decodes like the analytics projection, applies nothing.
    struct DecodeOnlyProjection: Projection {
        func decode(_ record: KafkaConsumerRecord) throws -> ReadingEventRecord {
            try ReadingEventRecord(json: record.value)
        }
        func apply(_ events: [ProjectedEvent<ReadingEventRecord>], in connection: PostgresConnection) async throws {}
    }

    func run() async throws -> Result {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        // The embedded broker keeps the last 5 MB of each partition: 24 partitions hold about
        // 200k events.
        try cluster.createTopic(Topics.readingEvents, partitions: 24)
        try cluster.createTopic(Topics.deadLetter(for: Topics.readingEvents), partitions: 1)
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers,
                                                                                   clientID: "analytics-bench"), logger: .disabled)
        let records = Self.events(events).map {
            KafkaProducerRecord(topic: Topics.readingEvents, key: Array($0.userId.utf8), value: try! ContractCoding.encode($0))
        }
        let produceStart = ContinuousClock.now
        for chunk in stride(from: 0, to: records.count, by: 10_000) {
            for result in await producer.send(Array(records[chunk..<min(records.count, chunk + 10_000)])) { _ = try result.get() }
        }
        log("produced \(records.count) records in \(String(format: "%.1f", seconds(ContinuousClock.now - produceStart))) s")
        let copyBefore = try await copyBaseline(Self.events(records.count))
        log("COPY baseline: \(Int(Double(records.count) / copyBefore)) rows/s")

        let baseline = try await measure(DecodeOnlyProjection(), group: "bench-decode-only", total: records.count,
                                          cluster: cluster, producer: producer)
        log("decode-only baseline: \(Int(baseline.rate)) records/s")
        let analytics = try await measure(AnalyticsProjection(), group: AnalyticsConfiguration.defaultGroupID,
                                          total: records.count, cluster: cluster, producer: producer)
        await producer.shutdown()
        let applyOnly = try await applyWithoutKafka(Self.events(records.count))
        let copyAfter = try await copyBaseline(Self.events(records.count))
        return Result(produced: records.count, batchSize: batchSize, copyRate: Double(records.count) * 2 / (copyBefore + copyAfter),
                      copyBefore: copyBefore, copyAfter: copyAfter, baseline: baseline.rate, aggregated: analytics.rate, aggregateSeconds: analytics.seconds,
                      applyOnly: applyOnly)
    }

    /// Runs a projection over the whole topic; the rate is measured from the moment a fifth
    /// of the records is committed (the group join is excluded) to the last one.
    func measure<P: Projection>(_ projection: P, group: String, total: Int, cluster: EmbeddedKafkaCluster,
                                producer: KafkaProducer) async throws -> (rate: Double, seconds: Double) {
        let metrics = MetricsRegistry()
        let runner = ProjectionRunner(
            projection: projection,
            configuration: ProjectionRunnerConfiguration(bootstrapServers: cluster.bootstrapServers, groupID: group,
                                                         topics: [Topics.readingEvents], maxBatchRecords: batchSize,
                                                         consumerProperties: CommonConfiguration.consumerProperties(fetchWait: EmbeddedKafkaCluster.fetchWait)),
            database: database, deadLetters: producer, metrics: metrics, logger: .disabled)
        let task = Task { try await runner.run() }
        var mark: (ContinuousClock.Instant, Int64)?
        var lastLog = ContinuousClock.now
        // Progress from the runner's committed-records counter (polling the database would
        // compete with the projection for the same cores).
        while true {
            let committed = Int64(metrics.value("projection_records_total", labels: ["group": group]) ?? 0)
            if mark == nil && committed >= total / 5 { mark = (.now, committed) }
            if committed >= total { break }
            if ContinuousClock.now - lastLog > .seconds(2) {
                lastLog = .now
                log("\(group): \(committed)/\(total) committed")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        let elapsed = seconds(ContinuousClock.now - mark!.0)
        task.cancel()
        _ = try? await task.value
        return (Double(Int64(total) - mark!.1) / elapsed, elapsed)
    }

    /// Seconds of one `COPY … FROM STDIN` of the events' rows into a fresh table shaped like
    /// the event log (its primary key included).
    func copyBaseline(_ events: [ReadingEventRecord]) async throws -> Double {
        _ = try await database.execute("DROP TABLE IF EXISTS copy_baseline")
        _ = try await database.execute("CREATE TABLE copy_baseline (LIKE analytics_events INCLUDING ALL)")
        let rows: [[any PostgresBindable]] = events.map { e in
            [e.eventId, e.userId, e.clientSessionId, e.materialId, e.eventType.rawValue, e.activeSecondsDelta, e.clientTimestamp,
             e.clientTimezoneOffsetMinutes, LocalDay(instant: e.clientTimestamp, offsetMinutes: e.clientTimezoneOffsetMinutes).description, e.receivedAt]
        }
        let start = ContinuousClock.now
        _ = try await database.withConnection { connection in
            try await connection.copy(into: "copy_baseline", columns: [
                "event_id", "user_id", "client_session_id", "material_id", "event_type", "active_seconds", "client_ts",
                "tz_offset_minutes", "local_day", "received_at"], rows: rows)
        }
        let elapsed = seconds(ContinuousClock.now - start)
        _ = try await database.execute("DROP TABLE copy_baseline")
        return elapsed
    }

    /// Events/s of `AnalyticsProjection.apply` alone: batches of new events, one
    /// transaction each, straight into Postgres.
    func applyWithoutKafka(_ events: [ReadingEventRecord]) async throws -> Double {
        let projection = AnalyticsProjection()
        let start = ContinuousClock.now
        for chunk in stride(from: 0, to: events.count, by: batchSize) {
            let batch = events[chunk..<min(events.count, chunk + batchSize)].enumerated().map {
                ProjectedEvent(event: $0.element, topic: Topics.readingEvents, partition: 0, offset: Int64(chunk + $0.offset))
            }
            try await database.withTransaction { connection in try await projection.apply(batch, in: connection) }
        }
        return Double(events.count) / seconds(ContinuousClock.now - start)
    }

    /// Realistic sessions: open, heartbeats, a completion now and then, close; 1,000 users.
    static func events(_ count: Int) -> [ReadingEventRecord] {
        var events: [ReadingEventRecord] = []
        events.reserveCapacity(count)
        let base = Date(timeIntervalSince1970: 1_780_000_000)
        var i = 0
        while events.count < count {
            let user = "bench-user-\(i % 1000)"
            let session = "bench-session-\(i)"
            let start = base.addingTimeInterval(Double(i) * 37)
            for step in 0..<10 where events.count < count {
                let type: ReadingEventType = step == 0 ? .opened : step == 9 ? .closed : step == 8 && i % 4 == 0 ? .markedAsRead : .heartbeat
                let item = ReadingEventUploadItem(
                    eventId: UUID().uuidString.lowercased(), clientSessionId: session, readingTargetType: .knowledgeSource,
                    materialId: "material-\(i % 50)", eventType: type, position: .fraction(Double(step) / 10),
                    activeSecondsDelta: step == 0 ? 0 : 30, clientTimestamp: start.addingTimeInterval(Double(step) * 30),
                    clientTimezoneOffsetMinutes: [480, -300, 0, 840, -720][i % 5], sequence: step, platform: "ios", appVersion: "1.0")
                events.append(ReadingEventRecord(userId: user, receivedAt: start, item: item))
            }
            i += 1
        }
        return events
    }
}

