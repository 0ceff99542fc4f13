import BlockingCalls
import CRdKafka

extension KafkaAdmin {
    /// The cluster's id as its brokers report it (`nil` when the cluster does not say).
    /// Stored positions are bound to it: a position stored against another cluster says
    /// nothing about this one's partitions.
    public func clusterID() async throws(KafkaError) -> String? {
        let client = self.client
        let ms = timeoutMilliseconds
        return try await BlockingCall.run("kafka.admin") { () throws(KafkaError) -> String? in
            // The id comes with the first metadata answer: ask for it, so an unreachable
            // cluster is an error and not a missing id.
            var metadata: UnsafePointer<rd_kafka_metadata>?
            let err = rd_kafka_metadata(client.pointer, 0, nil, &metadata, ms)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
                throw KafkaError(rdKafka: err, context: "metadata")
            }
            rd_kafka_metadata_destroy(metadata)
            guard let id = rd_kafka_clusterid(client.pointer, ms) else { return nil }
            defer { rd_kafka_mem_free(client.pointer, id) }
            return String(cString: id)
        }
    }
}
