import Foundation
import Kafka
import Postgres
import Projection
import ServiceLogging
import ServiceRuntime

/// One look at the system for `backbone status`, read as a read-only operator may: each
/// service's `/readyz`, the consumer groups' stored positions (PostgreSQL) against the
/// partitions' watermarks (Kafka metadata), the dead-letter topics' depth and replays, and
/// what waits in PostgreSQL (`SystemBacklog`).
struct StatusSnapshot: Sendable {
    struct ServiceReadiness: Sendable, Encodable {
        var name: String
        var url: String
        /// `ready`, `not_ready` (it answered 503) or `unreachable`.
        var state: String
        var checks: [String: Bool] = [:]
        /// Why it is not ready (the report's reason says it).
        var error: String?

        enum CodingKeys: String, CodingKey {
            case name, url, checks
            case state = "readiness"
        }
    }

    struct GroupLag: Sendable, Encodable {
        var group: String
        var topics: [String]
        var lagRecords: Int64
        /// The age of the oldest record not yet processed; 0 when level; nil when unknown.
        var lagSeconds: Double?
        /// Σ of the stored positions, for the apply rate between two snapshots.
        var positionSum: Int64
        /// Records applied per second since the previous snapshot (set by the report); nil on the first.
        var applyRatePerSecond: Double?

        enum CodingKeys: String, CodingKey { case group, topics, lagRecords, lagSeconds, applyRatePerSecond }
    }

    struct DeadLetterQueue: Sendable, Encodable {
        var topic: String
        var records: Int64
        /// Records past the last one `backbone dlq replay` replayed (all of them when none was).
        var sinceLastReplay: Int64
        var lastReplayAt: Date?
    }

    var takenAt = Date()
    var services: [ServiceReadiness] = []
    var groups: [GroupLag] = []
    var deadLetterQueues: [DeadLetterQueue] = []
    var backlog: SystemBacklog?
    /// Why PostgreSQL or Kafka could not be read (nil: it answered).
    var databaseError: String?
    var kafkaError: String?

    /// The services whose readiness is asked, at their URL in the settings (the dev ports otherwise).
    static func serviceURLs(_ values: [String: String] = DevEnvironment.resolved()) -> [(name: String, url: String)] {
        ServiceCatalog.entries.map { entry in
            (entry.name, values[entry.urlKey].flatMap { $0.isEmpty ? nil : $0 } ?? "http://127.0.0.1:\(entry.defaultPort)")
        }
    }

    /// Takes a snapshot; what cannot be reached is recorded in it, never thrown.
    static func take(kafka: KafkaSettings?, database: PostgresClient?, logger: Logger) async -> StatusSnapshot {
        var snapshot = StatusSnapshot()
        async let services = readiness(serviceURLs())
        var positions: [StoredOffsets.Position] = []
        var replays: [String: [KafkaTopicPartition: (offset: Int64, at: Date)]] = [:]
        if let database {
            do {
                positions = try await StoredOffsets.list(group: nil, client: database)
                snapshot.backlog = try await SystemBacklog.measure(database)
                replays = try await lastReplays(database)
            } catch {
                snapshot.databaseError = "\(error)"
            }
        } else {
            snapshot.databaseError = "DATABASE_URL is not set"
        }
        if let kafka {
            do {
                try await readKafka(kafka, positions: positions, replays: replays, into: &snapshot)
            } catch let error as CommandError {
                snapshot.kafkaError = error.message
            } catch {
                snapshot.kafkaError = "\(error)"
            }
        } else {
            snapshot.kafkaError = "KAFKA_BROKERS is not set"
        }
        snapshot.services = await services
        snapshot.takenAt = Date()
        return snapshot
    }

    static func readiness(_ urls: [(name: String, url: String)]) async -> [ServiceReadiness] {
        let http = DemoHTTPClient(timeout: 3)
        return await withTaskGroup(of: (Int, ServiceReadiness).self) { group in
            for (index, service) in urls.enumerated() {
                group.addTask {
                    var result = ServiceReadiness(name: service.name, url: service.url, state: "unreachable")
                    do {
                        let response = try await http.send("GET", service: service.name, base: service.url, path: "/readyz", token: nil)
                        struct Body: Decodable { var checks: [String: Bool]? }
                        result.checks = response.decode(Body.self)?.checks ?? [:]
                        result.state = response.status == 200 ? "ready" : "not_ready"
                        if response.status != 200 {
                            let failed = result.checks.filter { !$0.value }.keys.sorted()
                            result.error = "/readyz answered \(response.status)"
                                + (failed.isEmpty ? "" : " (\(failed.joined(separator: ", ")) unreachable)")
                        }
                    } catch let error as CommandError {
                        result.error = error.message
                    } catch {
                        result.error = "\(error)"
                    }
                    return (index, result)
                }
            }
            var results: [(Int, ServiceReadiness)] = []
            for await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    /// The last replayed dead letter of each dead-letter partition, by cluster id (as `backbone
    /// dlq replay` records them: the same offsets on another cluster are other records).
    static func lastReplays(_ database: PostgresClient) async throws -> [String: [KafkaTopicPartition: (offset: Int64, at: Date)]] {
        let rows = try await database.query("""
            SELECT cluster_id, dlq_topic, dlq_partition, max(dlq_offset) AS last_offset, max(replayed_at) AS last_at
            FROM dead_letter_replays GROUP BY cluster_id, dlq_topic, dlq_partition
            """)
        var result: [String: [KafkaTopicPartition: (offset: Int64, at: Date)]] = [:]
        for row in rows {
            let key = KafkaTopicPartition(topic: try row.decode(String.self, "dlq_topic"), partition: try row.decode(Int32.self, "dlq_partition"))
            result[try row.decode(String.self, "cluster_id"), default: [:]][key] = (try row.decode(Int64.self, "last_offset"),
                                                                                   try row.decode(Date.self, "last_at"))
        }
        return result
    }

    /// Watermarks of every dead-letter topic (with the replays recorded against this cluster)
    /// and every stored position's partition; the age of the oldest unprocessed record of each
    /// partition that lags.
    static func readKafka(_ kafka: KafkaSettings, positions: [StoredOffsets.Position],
                          replays byCluster: [String: [KafkaTopicPartition: (offset: Int64, at: Date)]],
                          into snapshot: inout StatusSnapshot) async throws {
        let admin = try kafka.admin()
        let topics = try await kafka.listTopics(admin)
        let cluster = try await OffsetsCommand.currentCluster(admin, settings: kafka)
        let replays = byCluster[cluster ?? ""] ?? [:]
        for topic in topics.map(\.name).filter({ $0.hasSuffix(".dlq") }).sorted() {
            var queue = DeadLetterQueue(topic: topic, records: 0, sinceLastReplay: 0)
            for partition in topics.first(where: { $0.name == topic })?.partitions ?? [] {
                let marks = try await admin.watermarks(topic: topic, partition: partition)
                let replayed = replays[KafkaTopicPartition(topic: topic, partition: partition)]
                queue.records += marks.high - marks.low
                // Never below 0: a topic deleted and created again starts its offsets over.
                queue.sinceLastReplay += max(0, marks.high - max(marks.low, (replayed?.offset ?? -1) + 1))
                if let at = replayed?.at { queue.lastReplayAt = max(queue.lastReplayAt ?? at, at) }
            }
            snapshot.deadLetterQueues.append(queue)
        }
        // Per group: the lag of each partition, and where its oldest unprocessed record is.
        var groups: [String: GroupLag] = [:]
        var unprocessed: [String: [KafkaTopicPartition: Int64]] = [:]
        let known = Set(topics.map(\.name))
        for position in positions where known.contains(position.partition.topic) {
            let marks = try await admin.watermarks(topic: position.partition.topic, partition: position.partition.partition)
            let lag = position.lag(low: marks.low, high: marks.high, currentCluster: cluster)
            let start = position.resumeOffset(low: marks.low, high: marks.high, currentCluster: cluster)
            var group = groups[position.groupID] ?? GroupLag(group: position.groupID, topics: [], lagRecords: 0, lagSeconds: 0, positionSum: 0)
            if !group.topics.contains(position.partition.topic) { group.topics.append(position.partition.topic) }
            group.lagRecords += lag
            group.positionSum += start
            groups[position.groupID] = group
            if lag > 0 { unprocessed[position.groupID, default: [:]][position.partition] = start }
        }
        // A lagging group is as far behind as its oldest unprocessed record is old: one short
        // read of the record at each of its lagging partitions' positions.
        for (name, starts) in unprocessed {
            groups[name]?.lagSeconds = await oldestAge(starts, kafka: kafka)
        }
        snapshot.groups = groups.values.sorted { $0.group < $1.group }
    }

    /// The age of the oldest of the records at `starts`; nil when none could be read.
    static func oldestAge(_ starts: [KafkaTopicPartition: Int64], kafka: KafkaSettings) async -> Double? {
        var plan = TopicReadPlan()
        for (partition, start) in starts {
            plan.partitions[partition] = .init(start: start, low: start, high: start + 1, notBefore: nil)
        }
        var reader = TopicReader(settings: kafka)
        reader.idleTimeout = .seconds(5)
        let now = Date()
        var oldest: Date?
        try? await reader.scan(topics: Set(starts.keys.map(\.topic)).sorted(), plan: plan, follow: false) { record in
            if let timestamp = record.timestamp { oldest = min(oldest ?? timestamp, timestamp) }
            return true
        }
        return oldest.map { max(0, now.timeIntervalSince($0)) }
    }
}
