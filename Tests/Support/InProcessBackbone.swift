import Contracts
import DevInfrastructure
import Kafka
import Lifecycle
import Postgres
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime

/// Services of the backbone run in this process, as the end-to-end suites run them: an embedded
/// cluster with every topic, one database they all use, a context per service (as `ServiceHost`
/// makes it for the executable) and the background parts started for them.
public final class InProcessBackbone: @unchecked Sendable {
    // @unchecked: set up, used and stopped by one test, in sequence.
    public let cluster: EmbeddedKafkaCluster
    public let database: TestDatabase
    let secret: String
    /// Each service's context, by the service's name.
    public private(set) var contexts: [String: ServiceContext] = [:]
    private var tasks: [Task<Void, any Error>] = []

    init(databasePrefix: String, secret: String) async throws {
        cluster = try EmbeddedKafkaCluster(brokers: 1, logger: .disabled)
        for topic in Topics.all { try cluster.createTopic(topic.name, partitions: topic.partitions) }
        database = try await TestDatabase.create(databasePrefix)
        self.secret = secret
    }

    /// A backbone for `body` with a context for each of `services` (tokens signed with `secret`),
    /// stopped whether `body` returns or throws.
    public static func with<T>(databasePrefix: String, secret: String, services: [String],
                               _ body: (InProcessBackbone) async throws -> T) async throws -> T {
        try await withResource(try await InProcessBackbone(databasePrefix: databasePrefix, secret: secret),
                               release: { await $0.stop() }) { backbone in
            let common = CommonConfiguration(kafkaBrokers: backbone.cluster.bootstrapServers, databaseURL: backbone.database.url,
                                             jwtSecret: secret, httpHost: "127.0.0.1", httpPort: 0, databasePoolSize: 6,
                                             kafkaFetchWait: EmbeddedKafkaCluster.fetchWait)
            for name in services {
                backbone.contexts[name] = try await ServiceHost.makeContext(name: name, configuration: common,
                                                                            metrics: MetricsRegistry(), logger: .disabled)
            }
            return try await body(backbone)
        }
    }

    /// The context of service `name`.
    public func context(_ name: String) throws -> ServiceContext {
        guard let context = contexts[name] else { throw MissingService(name: name) }
        return context
    }

    struct MissingService: Error, CustomStringConvertible {
        let name: String
        var description: String { "no context was made for \(name)" }
    }

    /// Runs the background parts of `parts` until `stop()`.
    public func start(_ parts: ServiceParts) {
        for part in parts.background { run { try await part.run() } }
    }

    /// Runs `operation` (a server or service loop of the test's own) until `stop()`.
    public func run(_ operation: @escaping @Sendable () async throws -> Void) {
        tasks.append(Task { try await operation() })
    }

    /// Cancels every started part and waits for it, then closes the contexts, drops the database
    /// and stops the broker.
    func stop() async {
        for task in tasks { task.cancel() }
        for task in tasks { _ = await task.result }
        for context in contexts.values { await context.producer.shutdown(); await context.database.close() }
        await database.drop()
        cluster.shutdown()
    }
}
