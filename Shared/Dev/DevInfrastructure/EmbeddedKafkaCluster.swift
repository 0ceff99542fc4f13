import CRdKafka
import Glibc
import Kafka
import ServiceLogging
import Synchronization

/// An in-process Kafka cluster: librdkafka's mock cluster, listening on loopback TCP, that
/// any Kafka client (ours, `kcat`, another process) can connect to via `bootstrapServers`.
///
/// Topics: the mock auto-creates any unknown topic a client asks metadata for by name, with
/// 4 partitions: a producer's first record or a consumer's subscription creates it (an admin
/// "list all topics" does not). Use `createTopic` to create topics with a chosen partition
/// count before clients use them (the Admin API's CreateTopics does not work against the
/// mock: it has no controller). Timestamp lookups (`offsetsForTimes`)
/// return -1 on the mock. Everything is in memory and disappears with `shutdown()`.
///
/// Unlike a Kafka broker, the mock leaves Nagle on for the connections it accepts: a
/// response written while an earlier one is unacknowledged then waits for the client's
/// delayed ACK (40 ms on Linux). The cluster therefore sets `TCP_NODELAY` on its listening
/// sockets (Linux copies it to every accepted connection), as a broker does.
public final class EmbeddedKafkaCluster: Sendable {
    /// The consumers' `fetch.wait.max.ms` against this cluster (`CommonConfiguration.kafkaFetchWait`):
    /// a mock broker answers a waiting fetch only when the wait ends, not when a record arrives
    /// as a Kafka broker does, so librdkafka's 500 ms would make every consumer trail by that.
    public static let fetchWait = Duration.milliseconds(20)

    /// Comma-separated `host:port` list of the mock brokers.
    public let bootstrapServers: String
    /// Broker ids are 1...brokerCount.
    public let brokerCount: Int
    private let handle: MockClusterHandle

    /// Starts a mock cluster with `brokers` brokers; `noDelay: false` keeps the mock's Nagle.
    public init(brokers: Int = 1, noDelay: Bool = true, logger: Logger = .disabled) throws(KafkaError) {
        guard brokers >= 1 else { throw KafkaError(code: .invalidArgument, message: "a cluster needs at least one broker") }
        let context = EmbeddedClusterContext(logger: logger)
        // The mock cluster needs a dedicated rd_kafka_t for its bookkeeping; it sends nothing.
        let client = try RdKafkaClient(type: RD_KAFKA_PRODUCER, properties: [("client.id", "embedded-kafka-cluster")], context: context)
        guard let cluster = rd_kafka_mock_cluster_new(client.pointer, Int32(brokers)) else {
            throw KafkaError(code: .other, message: "could not start the mock Kafka cluster")
        }
        self.handle = MockClusterHandle(cluster: cluster, client: client)
        self.bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
        self.brokerCount = brokers
        if noDelay { Self.disableNagleOnListeners(bootstrapServers) }
        // Consumers of this broker in this process bind their positions to its address too.
        KafkaClusterIdentity.register(Self.clusterIdentity, forBootstrapServers: bootstrapServers)
        logger.info("embedded Kafka cluster started", metadata: ["kafka.bootstrap": bootstrapServers, "kafka.brokers": String(brokers)])
    }

    deinit { shutdown() }

    /// Sets TCP_NODELAY on this process's listening sockets bound to the ports of `servers`
    /// ("host:port,…"): the mock brokers' listeners.
    private static func disableNagleOnListeners(_ servers: String) {
        let ports = Set(servers.split(separator: ",").compactMap { $0.split(separator: ":").last.flatMap { UInt16($0) } })
        for fd in Int32(0)..<Int32(4096) {
            var listening: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0, listening == 1 else { continue }
            var address = sockaddr_in()
            var addressLength = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &addressLength) }
            }
            guard named == 0, address.sin_family == sa_family_t(AF_INET), ports.contains(UInt16(bigEndian: address.sin_port)) else { continue }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// Creates `name` with `partitions` partitions (replication: min(3, brokers) unless given).
    /// A topic that already exists (e.g. auto-created) counts as success and keeps its partitions.
    public func createTopic(_ name: String, partitions: Int32, replicationFactor: Int32? = nil) throws(KafkaError) {
        let replicas = min(replicationFactor ?? 3, Int32(brokerCount))
        let err = try handle.withCluster { cluster in rd_kafka_mock_topic_create(cluster, name, partitions, replicas) }
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS else {
            throw KafkaError(rdKafka: err, context: "create topic \(name)")
        }
    }

    /// Disconnects broker `id` (1-based) and refuses new connections; no leader change.
    public func setBrokerDown(_ id: Int32) throws(KafkaError) {
        try check(try handle.withCluster { rd_kafka_mock_broker_set_down($0, id) }, "broker \(id) down")
    }

    /// Lets broker `id` accept connections again.
    public func setBrokerUp(_ id: Int32) throws(KafkaError) {
        try check(try handle.withCluster { rd_kafka_mock_broker_set_up($0, id) }, "broker \(id) up")
    }

    /// Takes every broker down (clients then see the cluster as unavailable).
    public func setAllBrokersDown() throws(KafkaError) {
        for id in 1...Int32(brokerCount) { try setBrokerDown(id) }
    }

    /// Brings every broker back up.
    public func setAllBrokersUp() throws(KafkaError) {
        for id in 1...Int32(brokerCount) { try setBrokerUp(id) }
    }

    /// Stops the brokers; clients still connected see transport errors. Idempotent.
    public func shutdown() {
        handle.destroy()
    }

    private func check(_ err: rd_kafka_resp_err_t, _ what: String) throws(KafkaError) {
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(rdKafka: err, context: what) }
    }
}

private final class EmbeddedClusterContext: RdKafkaCallbackContext {
    package let logger: Logger
    init(logger: Logger) { self.logger = logger }
}

/// Owns the mock cluster and its rd_kafka_t, destroying them once.
///
/// `@unchecked Sendable`: the mock API posts every operation to the cluster's own thread, so
/// calls from any thread are safe; `destroyed` (under the mutex) guarantees no call runs
/// after or concurrently with `rd_kafka_mock_cluster_destroy`.
private final class MockClusterHandle: @unchecked Sendable {
    private let cluster: OpaquePointer
    private let client: RdKafkaClient
    private let destroyed = Mutex(false)

    init(cluster: OpaquePointer, client: RdKafkaClient) {
        self.cluster = cluster
        self.client = client
    }

    func withCluster<R>(_ body: (OpaquePointer) -> R) throws(KafkaError) -> R {
        let result: R? = destroyed.withLock { destroyed in destroyed ? nil : body(cluster) }
        guard let result else { throw .shutdown("embedded cluster") }
        return result
    }

    func destroy() {
        destroyed.withLock { destroyed in
            guard !destroyed else { return }
            destroyed = true
            rd_kafka_mock_cluster_destroy(cluster)
        }
    }
}
