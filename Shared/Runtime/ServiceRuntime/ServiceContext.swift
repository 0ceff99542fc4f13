import Auth
import HTTPRouting
import Kafka
import Lifecycle
import Postgres
import PrometheusMetrics
import ServiceLogging

/// What every service is built from: its settings, the shared clients, the token checker,
/// metrics and a logger. `backbone dev` builds one per service over shared clients;
/// a service executable builds its own.
public struct ServiceContext: Sendable {
    public let name: String
    public let configuration: CommonConfiguration
    public let database: PostgresClient
    /// What the service sends records through (a `KafkaProducer`, decorated in `backbone dev`).
    public let producer: any KafkaRecordSender
    /// Metadata client for readiness checks and operator commands.
    public let admin: KafkaAdmin
    public let authenticator: RequestAuthenticator
    /// `/readyz`'s Kafka check (a client of its own, replaced after a failed check).
    public let kafkaProbe: KafkaReadinessProbe
    public let metrics: MetricsRegistry
    public let logger: Logger
    /// What a scrape of the service's `/metrics` measures first: its own parts of the
    /// `SystemBacklog` (`SystemBacklog.collector`), unless the host that runs it sets another
    /// (`backbone dev`, where one registry serves every service, measures every part).
    public var scrapeCollector: @Sendable () async -> Void
    /// Told about the consumer groups of the service's projections (`ConsumerGroupObserver`):
    /// set by a host that waits for them (`backbone dev`), nil in a service process.
    public var consumerGroupObserver: (any ConsumerGroupObserver)?

    /// - Parameter keys: the key set of ES256/RS256 tokens, read at start
    ///   (`ServiceHost.makeContext`) and shared by the services of one process; without it,
    ///   one is made from `configuration.tokenVerification` and read when a token first needs it.
    public init(name: String, configuration: CommonConfiguration, database: PostgresClient, producer: any KafkaRecordSender,
                admin: KafkaAdmin, metrics: MetricsRegistry, logger: Logger, keys: JSONWebKeyring? = nil) {
        self.name = name
        self.configuration = configuration
        self.database = database
        self.producer = producer
        self.admin = admin
        let tokens = configuration.tokenVerification
        let keys = keys ?? tokens.keySet.map { JSONWebKeyring(source: $0, logger: logger) }
        self.authenticator = RequestAuthenticator(codec: JWTCodec(secret: configuration.jwtSecret, keys: keys,
                                                                  issuer: tokens.issuer, audience: tokens.audience))
        self.kafkaProbe = KafkaReadinessProbe(bootstrapServers: configuration.kafkaBrokers, clientID: "\(name)-readiness")
        self.metrics = metrics
        var logger = logger
        logger[metadataKey: "service"] = name
        self.logger = logger
        self.scrapeCollector = SystemBacklog.collector(database: database, metrics: metrics, services: [name])
    }

    /// Readiness: Postgres answers `SELECT 1` and the Kafka cluster answers a metadata request.
    public var readinessChecks: [ReadinessCheck] {
        let database = self.database
        let probe = self.kafkaProbe
        return [
            ReadinessCheck(name: "postgres") { await database.ping() },
            ReadinessCheck(name: "kafka") { await probe.check() },
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
    /// For a service that serves HTTP itself on its port (the realtime notifier's WebSocket
    /// server): given `router` plus the health routes, returns the service that serves them,
    /// used instead of the host's `HTTPService`.
    public var httpServer: (@Sendable (Router) -> any Service)?
    /// The service's own `/readyz` checks, after the context's (e.g. a consumer that holds
    /// no partition while its records wait).
    public var readiness: [ReadinessCheck]

    public init(router: Router, background: [any Service] = [], onShutdown: @escaping @Sendable () async -> Void = {},
                httpServer: (@Sendable (Router) -> any Service)? = nil, readiness: [ReadinessCheck] = []) {
        self.router = router
        self.background = background
        self.onShutdown = onShutdown
        self.httpServer = httpServer
        self.readiness = readiness
    }
}
