import BlockingCalls
import Foundation
import ServiceLogging

/// Operator queries and topic management. Every call does network I/O on a dedicated
/// dispatch queue (never on the cooperative pool) and is bounded by `timeout`.
public final class KafkaAdmin: Sendable {
    let client: RdKafkaClient
    let timeout: Duration
    public let bootstrapServers: String

    public init(bootstrapServers: String, clientID: String = "zhixi-backbone-admin", timeout: Duration = .seconds(10),
                extra: [String: String] = [:], logger: Logger) throws(KafkaError) {
        let properties = [("bootstrap.servers", bootstrapServers), ("client.id", clientID), ("allow.auto.create.topics", "false")]
            + extra.sorted { $0.key < $1.key }
        self.client = try RdKafkaClient.makeAdmin(properties: properties, context: AdminContext(logger: logger))
        self.timeout = timeout
        self.bootstrapServers = bootstrapServers
    }

    /// Every topic in the cluster (internal ones included), sorted by name.
    public func listTopics() async throws(KafkaError) -> [KafkaTopicMetadata] {
        let client = self.client
        let timeout = self.timeout
        return try await BlockingCall.run("kafka.admin") { () throws(KafkaError) -> [KafkaTopicMetadata] in
            try client.metadata(timeout: timeout).sorted { $0.name < $1.name }
        }
    }

    /// The partition's low (earliest) and high (next to be written) offsets, asked of the leader.
    public func watermarks(topic: String, partition: Int32) async throws(KafkaError) -> (low: Int64, high: Int64) {
        let client = self.client
        let timeout = self.timeout
        return try await BlockingCall.run("kafka.admin") { () throws(KafkaError) -> (low: Int64, high: Int64) in
            try client.queryWatermarks(topic: topic, partition: partition, timeout: timeout)
        }
    }

    /// For each partition of `topic`: the earliest offset whose timestamp is at or after `time`
    /// (-1 where no such record exists yet, i.e. consume from the end).
    public func offsets(forTime time: Date, topic: String) async throws(KafkaError) -> [Int32: Int64] {
        guard let metadata = try await listTopics().first(where: { $0.name == topic }) else {
            throw KafkaError(code: .unknownTopic, message: "topic \(topic) does not exist")
        }
        let client = self.client
        let timeout = self.timeout
        let timestamp = Int64((time.timeIntervalSince1970 * 1000).rounded(.down))
        return try await BlockingCall.run("kafka.admin") { () throws(KafkaError) -> [Int32: Int64] in
            try client.offsetsForTimes(topic: topic, partitions: metadata.partitions, timestamp: timestamp, timeout: timeout)
        }
    }
}

private final class AdminContext: RdKafkaCallbackContext {
    let logger: Logger
    init(logger: Logger) { self.logger = logger }
}
