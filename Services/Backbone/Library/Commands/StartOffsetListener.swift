import Kafka
import Synchronization

/// Starts each assigned partition at its planned offset, or — after a rebalance in the middle
/// of reading — just after the last record already read, so nothing is printed twice.
/// Partitions outside the plan (not selected by `--partition`) start at the end.
final class StartOffsetListener: KafkaRebalanceListener {
    private let next: Mutex<[KafkaTopicPartition: Int64]>

    init(starts: [KafkaTopicPartition: Int64]) {
        next = Mutex(starts)
    }

    func advance(_ partition: KafkaTopicPartition, to offset: Int64) {
        next.withLock { $0[partition] = offset }
    }

    func partitionsAssigned(_ partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64] {
        let known = next.withLock { $0 }
        var starts: [KafkaTopicPartition: Int64] = [:]
        for partition in partitions { starts[partition] = known[partition] ?? Self.offsetEnd }
        return starts
    }

    func partitionsRevoked(_ partitions: [KafkaTopicPartition]) async {}

    /// librdkafka's `RD_KAFKA_OFFSET_END` (-1): the next record written.
    static let offsetEnd: Int64 = -1
}
