import CRdKafka

/// The admin client's librdkafka calls: cluster metadata and offset queries. Each does network
/// I/O and blocks for up to its `timeout`, so callers run them through `BlockingCall.run`.
extension RdKafkaClient {
    /// A handle for queries only: a producer handle (it joins no group and sends nothing it is
    /// not asked to), with no callback but the log's, since nothing polls it.
    static func makeAdmin(properties: [(String, String)], context: any RdKafkaCallbackContext) throws(KafkaError) -> RdKafkaClient {
        try RdKafkaClient(type: RD_KAFKA_PRODUCER, properties: properties, context: context)
    }

    /// Every topic in the cluster (internal ones included) that the cluster reports without an
    /// error, in the cluster's order, each with its partition ids ascending.
    func metadata(timeout: Duration) throws(KafkaError) -> [KafkaTopicMetadata] {
        try withMetadata(allTopics: true, timeout: timeout) { metadata in
            (0..<Int(metadata.pointee.topic_cnt)).compactMap { index -> KafkaTopicMetadata? in
                let topic = metadata.pointee.topics[index]
                guard topic.err == RD_KAFKA_RESP_ERR_NO_ERROR else { return nil }
                let ids = (0..<Int(topic.partition_cnt)).map { topic.partitions[$0].id }.sorted()
                return KafkaTopicMetadata(name: String(cString: topic.topic), partitions: ids)
            }
        }
    }

    /// The cluster's id as its brokers report it (`nil` when the cluster does not say).
    func clusterID(timeout: Duration) throws(KafkaError) -> String? {
        // The id comes with the first metadata answer: ask for it, so an unreachable
        // cluster is an error and not a missing id.
        try withMetadata(allTopics: false, timeout: timeout) { _ in }
        guard let id = rd_kafka_clusterid(pointer, timeout.rdKafkaMilliseconds) else { return nil }
        defer { rd_kafka_mem_free(pointer, id) }
        return String(cString: id)
    }

    /// Asks the cluster for metadata (all topics, or only those the handle knows) and lends it
    /// to `body`; it is freed afterwards.
    private func withMetadata<R>(allTopics: Bool, timeout: Duration,
                                 _ body: (UnsafePointer<rd_kafka_metadata>) -> R) throws(KafkaError) -> R {
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let err = rd_kafka_metadata(pointer, allTopics ? 1 : 0, nil, &metadata, timeout.rdKafkaMilliseconds)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
            throw KafkaError(rdKafka: err, context: "metadata")
        }
        defer { rd_kafka_metadata_destroy(metadata) }
        return body(metadata)
    }

    /// The partition's low (earliest) and high (next to be written) offsets, asked of the leader.
    func queryWatermarks(topic: String, partition: Int32, timeout: Duration) throws(KafkaError) -> (low: Int64, high: Int64) {
        var low: Int64 = -1
        var high: Int64 = -1
        let err = rd_kafka_query_watermark_offsets(pointer, topic, partition, &low, &high, timeout.rdKafkaMilliseconds)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(rdKafka: err, context: "watermarks of \(topic)[\(partition)]")
        }
        return (low, high)
    }

    /// For each of `partitions` of `topic`: the earliest offset whose timestamp is at or after
    /// `timestamp` (milliseconds since the epoch; -1 where no such record exists yet).
    func offsetsForTimes(topic: String, partitions: [Int32], timestamp: Int64, timeout: Duration) throws(KafkaError) -> [Int32: Int64] {
        let list = Self.makePartitionList(partitions.map { (KafkaTopicPartition(topic: topic, partition: $0), timestamp) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let err = rd_kafka_offsets_for_times(pointer, list, timeout.rdKafkaMilliseconds)
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
