import BlockingCalls
import CRdKafka
import Foundation
import ServiceLogging

/// Operator queries and topic management. Every call does network I/O on a dedicated
/// dispatch queue (never on the cooperative pool) and is bounded by `timeout`.
public final class KafkaAdmin: Sendable {
    let client: RdKafkaClient
    private let timeout: Duration
    public let bootstrapServers: String

    public init(bootstrapServers: String, clientID: String = "zhixi-backbone-admin", timeout: Duration = .seconds(10),
                extra: [String: String] = [:], logger: Logger) throws(KafkaError) {
        let properties = [("bootstrap.servers", bootstrapServers), ("client.id", clientID), ("allow.auto.create.topics", "false")]
            + extra.sorted { $0.key < $1.key }
        self.client = try RdKafkaClient(type: RD_KAFKA_PRODUCER, properties: properties, context: AdminContext(logger: logger))
        self.timeout = timeout
        self.bootstrapServers = bootstrapServers
    }

    var timeoutMilliseconds: Int32 { Int32(clamping: timeout.wholeMilliseconds) }

    /// Every topic in the cluster (internal ones included), sorted by name.
    public func listTopics() async throws(KafkaError) -> [KafkaTopicMetadata] {
        let client = self.client
        let ms = timeoutMilliseconds
        return try await BlockingCall.run("kafka.admin") { () throws(KafkaError) -> [KafkaTopicMetadata] in
            var metadata: UnsafePointer<rd_kafka_metadata>?
            let err = rd_kafka_metadata(client.pointer, 1, nil, &metadata, ms)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
                throw KafkaError(rdKafka: err, context: "metadata")
            }
            defer { rd_kafka_metadata_destroy(metadata) }
            let topics = (0..<Int(metadata.pointee.topic_cnt)).compactMap { index -> KafkaTopicMetadata? in
                let topic = metadata.pointee.topics[index]
                guard topic.err == RD_KAFKA_RESP_ERR_NO_ERROR else { return nil }
                let ids = (0..<Int(topic.partition_cnt)).map { topic.partitions[$0].id }.sorted()
                return KafkaTopicMetadata(name: String(cString: topic.topic), partitions: ids)
            }
            return topics.sorted { $0.name < $1.name }
        }
    }

    /// The partition's low (earliest) and high (next to be written) offsets, asked of the leader.
    public func watermarks(topic: String, partition: Int32) async throws(KafkaError) -> (low: Int64, high: Int64) {
        let client = self.client
        let ms = timeoutMilliseconds
        let marks = try await BlockingCall.run("kafka.admin") { () throws(KafkaError) -> [Int64] in
            var low: Int64 = -1
            var high: Int64 = -1
            let err = rd_kafka_query_watermark_offsets(client.pointer, topic, partition, &low, &high, ms)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                throw KafkaError(rdKafka: err, context: "watermarks of \(topic)[\(partition)]")
            }
            return [low, high]
        }
        return (marks[0], marks[1])
    }

    /// For each partition of `topic`: the earliest offset whose timestamp is at or after `time`
    /// (-1 where no such record exists yet, i.e. consume from the end).
    public func offsets(forTime time: Date, topic: String) async throws(KafkaError) -> [Int32: Int64] {
        guard let metadata = try await listTopics().first(where: { $0.name == topic }) else {
            throw KafkaError(code: .unknownTopic, message: "topic \(topic) does not exist")
        }
        let client = self.client
        let ms = timeoutMilliseconds
        let timestamp = Int64((time.timeIntervalSince1970 * 1000).rounded(.down))
        return try await BlockingCall.run("kafka.admin") { () throws(KafkaError) -> [Int32: Int64] in
            let list = rd_kafka_topic_partition_list_new(Int32(metadata.partitions.count))!
            defer { rd_kafka_topic_partition_list_destroy(list) }
            for partition in metadata.partitions {
                rd_kafka_topic_partition_list_add(list, topic, partition).pointee.offset = timestamp
            }
            let err = rd_kafka_offsets_for_times(client.pointer, list, ms)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                throw KafkaError(rdKafka: err, context: "offsets for time in \(topic)")
            }
            var offsets: [Int32: Int64] = [:]
            for index in 0..<Int(list.pointee.cnt) {
                let element = list.pointee.elems[index]
                guard element.err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    throw KafkaError(rdKafka: element.err, context: "offsets for time in \(topic)[\(element.partition)]")
                }
                offsets[element.partition] = element.offset
            }
            return offsets
        }
    }
}

private final class AdminContext: RdKafkaCallbackContext {
    let logger: Logger
    init(logger: Logger) { self.logger = logger }
}
