import BlockingCalls
import ServiceLogging
import Synchronization

/// Opening and dropping librdkafka clients off the cooperative pool.
///
/// `rd_kafka_new` returns only once the client's own threads have started, and while the
/// bootstrap brokers refuse connections that takes about a second (the main thread's first
/// timer tick; seen with Debian's librdkafka 2.0.2); `rd_kafka_destroy` joins those threads.
/// A service that creates a client on a thread of the cooperative pool while the broker is
/// down holds that thread for the second: two at once held both threads of a 2-core
/// machine, and every HTTP request of the process waited (a ~0.8 s stall of `/healthz`,
/// once the projections' assignment check asked the cluster 30 s after start). Code that runs
/// while a service serves opens its clients with `open` and drops them with `release`;
/// start-up code, which serves nothing yet, may use the initializers directly.
public enum KafkaClients {
    /// Runs `make` (a `KafkaAdmin`, `KafkaConsumer` or `KafkaProducer` initializer) on a
    /// thread outside the cooperative pool and returns what it made.
    public static func open<Client: Sendable>(_ make: @escaping @Sendable () throws(KafkaError) -> Client) async throws(KafkaError) -> Client {
        try await BlockingCall.run("kafka.open", make)
    }

    /// Gives up the caller's reference to `client` on a thread outside the cooperative pool:
    /// when it was the last one, the client is destroyed there.
    public static func release<Client: AnyObject & Sendable>(_ client: consuming Client) {
        let box = Box(client: consume client)
        Blocking.detach { box.client.withLock { $0 = nil } }
    }

    private final class Box<Client: AnyObject & Sendable>: Sendable {
        let client: Mutex<Client?>
        init(client: consuming Client) { self.client = Mutex(client) }
    }
}

/// An admin client opened on first use (off the cooperative pool) and replaced once a request
/// on it failed: a client that lived through a broker outage can keep timing out after the
/// brokers are back (seen with librdkafka's mock cluster: its requests go unanswered on a
/// connection it believes up), so the next request asks on a new one.
public final class ReplaceableKafkaAdmin: Sendable {
    let bootstrapServers: String
    let clientID: String
    let timeout: Duration
    let logger: Logger
    private let current = Mutex<KafkaAdmin?>(nil)

    public init(bootstrapServers: String, clientID: String, timeout: Duration, logger: Logger) {
        self.bootstrapServers = bootstrapServers
        self.clientID = clientID
        self.timeout = timeout
        self.logger = logger
    }

    /// The current client, opened now if there is none. Two callers that open one at once
    /// keep the first stored; the other is released.
    public func admin() async throws(KafkaError) -> KafkaAdmin {
        if let admin = current.withLock({ $0 }) { return admin }
        let made = try await KafkaClients.open { [self] () throws(KafkaError) in
            try KafkaAdmin(bootstrapServers: bootstrapServers, clientID: clientID, timeout: timeout, logger: logger)
        }
        let kept = current.withLock { current -> KafkaAdmin? in
            if let current { return current }
            current = made
            return nil
        }
        guard let kept else { return made }
        KafkaClients.release(consume made)
        return kept
    }

    /// The client open now, if any.
    public var openClient: KafkaAdmin? { current.withLock { $0 } }

    /// Drops the current client (only `failed` when given, so a request that failed on an
    /// older client does not drop the one that replaced it); the next `admin()` opens anew.
    public func replace(_ failed: KafkaAdmin? = nil) {
        let old = current.withLock { current -> KafkaAdmin? in
            guard let admin = current, failed == nil || admin === failed else { return nil }
            current = nil
            return admin
        }
        guard let old else { return }
        KafkaClients.release(consume old)
    }
}
