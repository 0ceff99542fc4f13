import Lifecycle
import ServiceLogging

/// Configuration of a `KafkaConsumer` (a consumer-group member with eager rebalancing,
/// no auto-commit: positions are supplied by the `KafkaRebalanceListener`).
public struct KafkaConsumerConfiguration: Sendable {
    /// The eager partition assignment strategies.
    public enum AssignmentStrategy: String, Sendable {
        case range
        case roundRobin = "roundrobin"
    }

    public var bootstrapServers: String
    public var groupID: String
    public var topics: [String]
    public var clientID: String
    /// `session.timeout.ms`: how long the group waits for a silent member before rebalancing.
    public var sessionTimeout: Duration
    public var assignmentStrategy: AssignmentStrategy
    /// How many records the consumer buffers ahead of `nextBatch`/`records`. When the buffer is
    /// full the consumer pauses fetching (backpressure) and resumes when it has drained to half.
    public var bufferCapacity: Int
    /// Raw librdkafka properties, applied last (they override the fields above).
    public var extra: [String: String]
    /// How long the rebalance listener may take to supply start offsets, all its attempts
    /// together. It runs inside librdkafka's rebalance callback; past this the consumer fails
    /// with `.rebalanceFailed` instead of holding an assignment the group may have moved on from.
    public var rebalanceListenerTimeout: Duration = .seconds(30)
    /// When set, the consumer reads exactly these partitions from these offsets (negative:
    /// the earliest) without joining the group: no rebalance, so no wait for the group to
    /// form (a reader of a bounded range, such as `backbone tail`). `topics` is then unused.
    public var assignment: [KafkaTopicPartition: Int64]?

    public init(bootstrapServers: String, groupID: String, topics: [String], clientID: String = "zhixi-backbone",
                sessionTimeout: Duration = .seconds(10), assignmentStrategy: AssignmentStrategy = .range,
                bufferCapacity: Int = 10_000, extra: [String: String] = [:]) {
        self.bootstrapServers = bootstrapServers
        self.groupID = groupID
        self.topics = topics
        self.clientID = clientID
        self.sessionTimeout = sessionTimeout
        self.assignmentStrategy = assignmentStrategy
        self.bufferCapacity = max(1, bufferCapacity)
        self.extra = extra
    }

    var properties: [(String, String)] {
        let list: [(String, String)] = [
            ("bootstrap.servers", bootstrapServers),
            ("group.id", groupID),
            ("client.id", clientID),
            ("session.timeout.ms", String(sessionTimeout.wholeMilliseconds)),
            ("partition.assignment.strategy", assignmentStrategy.rawValue),
            ("enable.auto.commit", "false"),
            // librdkafka's own prefetch queue, bounded: it is all that is buffered while ours is full.
            ("queued.max.messages.kbytes", "16384"),
            ("enable.auto.offset.store", "false"),
            ("auto.offset.reset", "earliest"),
            ("enable.partition.eof", "false"),
        ]
        return list + extra.sorted { $0.key < $1.key }
    }
}
