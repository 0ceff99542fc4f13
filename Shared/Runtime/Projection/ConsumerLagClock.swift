import Foundation
import Kafka

/// How far behind in time a projection is on each partition (`kafka_consumer_lag_seconds`):
/// 0 while it is level with the partition's end; behind, the time since the later of the last
/// applied record's timestamp and the moment it was last level. A consumer that is stuck, or
/// that works through old records, is thus as far behind as those records are old, while one
/// that is a few fresh records behind under load, or that just received a burst after an idle
/// hour, is only seconds behind.
struct ConsumerLagClock: Sendable {
    var lastApplied: [KafkaTopicPartition: Date] = [:]
    var lastLevel: [KafkaTopicPartition: Date] = [:]
    let started: Date

    init(started: Date = Date()) { self.started = started }

    mutating func applied(_ records: some Sequence<KafkaConsumerRecord>) {
        for record in records {
            guard let timestamp = record.timestamp else { continue }
            let partition = record.topicPartition
            if timestamp > lastApplied[partition] ?? .distantPast { lastApplied[partition] = timestamp }
        }
    }

    /// The partition's lag in seconds, given its lag in records now.
    mutating func seconds(_ partition: KafkaTopicPartition, records lag: Int64, now: Date = Date()) -> Double {
        if lag <= 0 {
            lastLevel[partition] = now
            return 0
        }
        let since = max(lastApplied[partition] ?? started, lastLevel[partition] ?? started)
        return max(0, now.timeIntervalSince(since))
    }
}
