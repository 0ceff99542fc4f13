import BlockingCalls

extension KafkaAdmin {
    /// The cluster's id as its brokers report it (`nil` when the cluster does not say).
    /// Stored positions are bound to it: a position stored against another cluster says
    /// nothing about this one's partitions.
    public func clusterID() async throws(KafkaError) -> String? {
        let client = self.client
        let timeout = self.timeout
        return try await BlockingCall.run("kafka.admin") { () throws(KafkaError) -> String? in
            try client.clusterID(timeout: timeout)
        }
    }
}
