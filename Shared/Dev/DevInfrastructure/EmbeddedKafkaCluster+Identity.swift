import Kafka

extension EmbeddedKafkaCluster {
    /// What a stack over an embedded broker binds its stored positions to: the broker's id and
    /// its address. librdkafka's mock cluster derives its id from a memory address, so a
    /// restarted embedded broker can report the id of the one before; its listener is a new
    /// ephemeral port each start. Registered for each embedded broker a process starts
    /// (`KafkaClusterIdentity.register`); the processes it serves apart are told by
    /// `KAFKA_CLUSTER_IDENTITY`.
    public static let clusterIdentity: KafkaClusterIdentity = .clusterIDAndAddress

    /// The identity of the cluster at `bootstrapServers` that reported `id`, by the rule of the
    /// stack over it: an embedded broker's (its id starts with `mockCluster`) with its address, a
    /// real cluster's alone. For the commands that read the positions of whichever stack they
    /// are pointed at (`backbone offsets`, `backbone rebuild`).
    public static func identity(reportedID id: String?, bootstrapServers: String) -> String? {
        let rule: KafkaClusterIdentity = id?.hasPrefix("mockCluster") == true ? clusterIdentity : .clusterID
        return rule.identity(of: id, bootstrapServers: bootstrapServers)
    }
}
