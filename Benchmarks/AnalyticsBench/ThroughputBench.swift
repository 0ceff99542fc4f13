import AnalyticsAggregator
import Contracts
import Foundation
import Kafka
import Logging
import Metrics
import Postgres
import Projection

/// Events/s from a pre-filled topic through the projection runner into Postgres, against
/// the raw consume rate of the same topic.
struct ThroughputBench {
    let events: Int
    let database: PostgresClient

    struct Result {
        var produced: Int
        var consumeOnly: Double
        var aggregated: Double
        var aggregateSeconds: Double
        var report: String {
            String(format: """
                throughput (%d records, 6 partitions, batches of 500):
                  baseline: consume only        %10.0f records/s
                  analytics projection          %10.0f events/s  (%.2f s, %.0f%% of the consume rate)
                """, produced, consumeOnly, aggregated, aggregateSeconds, 100 * aggregated / consumeOnly)
        }
    }

    func run() async throws -> Result {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        try cluster.createTopic(Topics.readingEvents, partitions: 6)
        try cluster.createTopic(Topics.deadLetter(for: Topics.readingEvents), partitions: 1)
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers,
                                                                                   clientID: "analytics-bench"), logger: .disabled)
        let records = Self.events(events).map {
            KafkaProducerRecord(topic: Topics.readingEvents, key: Array($0.userId.utf8), value: try! ContractCoding.encode($0))
        }
        for chunk in stride(from: 0, to: records.count, by: 10_000) {
            for result in await producer.send(Array(records[chunk..<min(records.count, chunk + 10_000)])) { _ = try result.get() }
        }

        // Baseline: the same records consumed with no work at all.
        let consumer = try KafkaConsumer(configuration: KafkaConsumerConfiguration(
            bootstrapServers: cluster.bootstrapServers, groupID: "bench-baseline", topics: [Topics.readingEvents]),
            rebalanceListener: nil, logger: .disabled)
        var consumed = 0
        let consumeStart = ContinuousClock.now
        while consumed < records.count {
            consumed += try await consumer.nextBatch(maxRecords: 500, maxWait: .milliseconds(50)).count
        }
        let consumeSeconds = seconds(ContinuousClock.now - consumeStart)
        await consumer.close()

        // The projection, from an empty read model.
        let runner = ProjectionRunner(
            projection: AnalyticsProjection(),
            configuration: ProjectionRunnerConfiguration(bootstrapServers: cluster.bootstrapServers, groupID: "analytics-aggregator",
                                                         topics: [Topics.readingEvents], maxBatchRecords: 500),
            database: database, deadLetters: producer, metrics: MetricsRegistry(), logger: .disabled)
        let start = ContinuousClock.now
        let task = Task { try await runner.run() }
        var firstRecord: ContinuousClock.Instant?
        while true {
            let rows = try await database.query(
                "SELECT COALESCE(sum(next_offset), 0)::bigint AS n FROM consumer_offsets WHERE next_offset >= 0")
            let committed = try rows.first?.decode(Int64.self, "n") ?? 0
            if committed > 0 && firstRecord == nil { firstRecord = .now }
            if committed >= records.count { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        // Measured from the first commit: the group join before it is not aggregation work.
        let aggregateSeconds = seconds(ContinuousClock.now - (firstRecord ?? start))
        task.cancel()
        _ = try? await task.value
        await producer.shutdown()
        return Result(produced: records.count, consumeOnly: Double(records.count) / consumeSeconds,
                      aggregated: Double(records.count) / aggregateSeconds, aggregateSeconds: aggregateSeconds)
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
