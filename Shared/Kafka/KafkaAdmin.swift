import BlockingCalls
import CRdKafka
import Foundation
import Logging

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

    /// Creates a topic through the Admin API. A topic that already exists counts as success.
    /// Against a cluster running in this process (the embedded development broker, whose mock
    /// brokers do not serve CreateTopics) that cluster creates it instead, and `config` is ignored.
    public func createTopic(name: String, partitions: Int32, replicationFactor: Int32,
                            config: [String: String] = [:]) async throws(KafkaError) {
        if let cluster = InProcessTopicCreators.creator(bootstrapServers: bootstrapServers) {
            return try cluster.createTopic(name, partitions: partitions, replicationFactor: replicationFactor)
        }
        let client = self.client
        let ms = timeoutMilliseconds
        try await BlockingCall.run("kafka.admin") { () throws(KafkaError) -> Void in
            try Self.createTopicBlocking(client.pointer, name: name, partitions: partitions, replicationFactor: replicationFactor,
                                     config: config, timeoutMilliseconds: ms)
        }
    }

    private static func createTopicBlocking(_ rk: OpaquePointer, name: String, partitions: Int32, replicationFactor: Int32,
                                            config: [String: String], timeoutMilliseconds: Int32) throws(KafkaError) {
        var errstr = [CChar](repeating: 0, count: 512)
        guard let newTopic = rd_kafka_NewTopic_new(name, partitions, replicationFactor, &errstr, errstr.count) else {
            throw KafkaError(code: .invalidArgument, message: String(cBuffer: errstr))
        }
        defer { rd_kafka_NewTopic_destroy(newTopic) }
        for (key, value) in config.sorted(by: { $0.key < $1.key }) {
            let err = rd_kafka_NewTopic_set_config(newTopic, key, value)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(rdKafka: err, context: "topic config \(key)") }
        }
        let queue = rd_kafka_queue_new(rk)
        defer { rd_kafka_queue_destroy(queue) }
        let options = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS)
        defer { rd_kafka_AdminOptions_destroy(options) }
        _ = rd_kafka_AdminOptions_set_request_timeout(options, timeoutMilliseconds, &errstr, errstr.count)
        _ = rd_kafka_AdminOptions_set_operation_timeout(options, timeoutMilliseconds, &errstr, errstr.count)
        var topics: [OpaquePointer?] = [newTopic]
        rd_kafka_CreateTopics(rk, &topics, 1, options, queue)
        guard let event = rd_kafka_queue_poll(queue, timeoutMilliseconds + 1000) else {
            throw KafkaError(code: .timedOut, message: "create topic \(name): no answer in time", isRetriable: true)
        }
        defer { rd_kafka_event_destroy(event) }
        let eventErr = rd_kafka_event_error(event)
        guard eventErr == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(rdKafka: eventErr, context: "create topic \(name)",
                             detail: rd_kafka_event_error_string(event).map { String(cString: $0) })
        }
        var count = 0
        guard let result = rd_kafka_event_CreateTopics_result(event),
              let results = rd_kafka_CreateTopics_result_topics(result, &count), count > 0, let topic = results[0] else {
            throw KafkaError(code: .other, message: "create topic \(name): empty result")
        }
        let err = rd_kafka_topic_result_error(topic)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS else {
            throw KafkaError(rdKafka: err, context: "create topic \(name)",
                             detail: rd_kafka_topic_result_error_string(topic).map { String(cString: $0) })
        }
    }
}

private final class AdminContext: RdKafkaCallbackContext {
    let logger: Logger
    init(logger: Logger) { self.logger = logger }
}
