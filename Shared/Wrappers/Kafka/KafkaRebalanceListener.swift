/// Told about partition assignment changes of a `KafkaConsumer` (eager protocol: every
/// rebalance revokes everything, then assigns the new set).
///
/// Both methods run while the consumer's poll thread waits for them: no record is fetched or
/// handed out until they return. Do not call `nextBatch` or iterate `records` from them.
public protocol KafkaRebalanceListener: Sendable {
    /// Returns the offset to start each assigned partition at (e.g. loaded from Postgres).
    /// A partition missing from the map starts at the earliest available offset. Throwing
    /// is retried (3 attempts); after that the consumer fails with `.rebalanceFailed`.
    func partitionsAssigned(_ partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64]

    /// The partitions are being taken away: finish (commit) or roll back the in-flight batch.
    /// Records of these partitions that were buffered but not handed out are already dropped.
    func partitionsRevoked(_ partitions: [KafkaTopicPartition]) async
}
