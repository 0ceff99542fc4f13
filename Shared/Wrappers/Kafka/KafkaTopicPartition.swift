/// One partition of one topic.
public struct KafkaTopicPartition: Hashable, Sendable, Codable, Comparable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public static func < (lhs: KafkaTopicPartition, rhs: KafkaTopicPartition) -> Bool {
        (lhs.topic, lhs.partition) < (rhs.topic, rhs.partition)
    }

    public var description: String { "\(topic)[\(partition)]" }
}

/// A topic as the cluster describes it.
public struct KafkaTopicMetadata: Hashable, Sendable {
    public var name: String
    /// Partition ids, ascending.
    public var partitions: [Int32]

    public init(name: String, partitions: [Int32]) {
        self.name = name
        self.partitions = partitions
    }
}
