import HTTPTypes
import Kafka
import Logging
import Metrics
import Postgres

/// What every service is built from: its settings, the shared clients, the token checker,
/// metrics and a logger. `backbone dev` builds one per service over shared clients;
/// a service executable builds its own.
public struct ServiceContext: Sendable {
    public let name: String
    public let configuration: CommonConfiguration
    public let database: PostgresClient
    public let producer: KafkaProducer
    /// Metadata client for readiness checks and operator commands.
    public let admin: KafkaAdmin
    public let authenticator: RequestAuthenticator
    public let metrics: MetricsRegistry
    public let logger: Logger

    public init(name: String, configuration: CommonConfiguration, database: PostgresClient, producer: KafkaProducer,
                admin: KafkaAdmin, metrics: MetricsRegistry, logger: Logger) {
        self.name = name
        self.configuration = configuration
        self.database = database
        self.producer = producer
        self.admin = admin
        self.authenticator = RequestAuthenticator(secret: configuration.jwtSecret)
        self.metrics = metrics
        var logger = logger
        logger[metadataKey: "service"] = name
        self.logger = logger
    }

    /// Readiness: Postgres answers `SELECT 1` and the Kafka cluster answers a metadata request.
    public var readinessChecks: [ReadinessCheck] {
        let database = self.database
        let admin = self.admin
        return [
            ReadinessCheck(name: "postgres") { await database.ping() },
            ReadinessCheck(name: "kafka") { (try? await admin.listTopics()) != nil },
        ]
    }
}

/// What a service library hands to the host: its HTTP routes and its background loops
/// (consumers, sequencers). The host adds `/healthz`, `/readyz` and `/metrics`.
public struct ServiceParts: Sendable {
    public var router: Router
    public var background: [any Service]
    /// Runs after every part has stopped (close clients the service opened itself).
    public var onShutdown: @Sendable () async -> Void

    public init(router: Router, background: [any Service] = [], onShutdown: @escaping @Sendable () async -> Void = {}) {
        self.router = router
        self.background = background
        self.onShutdown = onShutdown
    }
}
