import Synchronization

/// What a consumer's stored positions are bound to, made from the id the cluster reports: a
/// position stored against another identity is not trusted (the partition is read again).
public enum KafkaClusterIdentity: String, Sendable, CaseIterable {
    /// The id alone. A real cluster's id is a UUID that stands alone, so renaming or moving its
    /// brokers replays nothing.
    case clusterID = "cluster-id"
    /// The id and the bootstrap servers: for a broker whose id may repeat from one run to the
    /// next while its address changes. The dev stack sets it for its embedded broker
    /// (`KAFKA_CLUSTER_IDENTITY`).
    case clusterIDAndAddress = "cluster-id-and-address"

    /// The identity of the cluster that reported `id` (nil when it reported none).
    public func identity(of id: String?, bootstrapServers: String) -> String? {
        guard let id else { return nil }
        switch self {
        case .clusterID: return id
        case .clusterIDAndAddress: return "\(id)@\(bootstrapServers)"
        }
    }
}

extension KafkaClusterIdentity {
    /// The rules registered for clusters of this process, by bootstrap servers.
    private static let registered = Mutex<[String: KafkaClusterIdentity]>([:])

    /// Binds positions stored against the cluster at `bootstrapServers` by `identity`, whatever
    /// a configuration says, for as long as the process runs: what a broker the process starts
    /// itself registers (the dev infrastructure's embedded broker), so that every consumer of it
    /// in the process binds its positions alike.
    public static func register(_ identity: KafkaClusterIdentity, forBootstrapServers bootstrapServers: String) {
        registered.withLock { $0[bootstrapServers] = identity }
    }

    /// The rule for the cluster at `bootstrapServers`: the one registered for it, else this one.
    public func resolved(for bootstrapServers: String) -> KafkaClusterIdentity {
        Self.registered.withLock { $0[bootstrapServers] } ?? self
    }
}
