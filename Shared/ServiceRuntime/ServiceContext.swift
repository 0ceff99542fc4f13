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
    /// Whose parts of the `SystemBacklog` this service's `/metrics` measures: its own by
    /// default; every part (nil) where one registry serves every service (`backbone dev`).
    public var measuredBacklog: Set<String>?
    /// Where the service's projections list their consumer groups while they run: only in
    /// `backbone dev` (its drain at exit and its broker journal wait for them), nil elsewhere.
    public var runningGroups: RunningConsumerGroups?

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
        self.measuredBacklog = [name]
    }

    /// What `/metrics` measures at scrape time: the backlog gauges of `measuredBacklog`
    /// (a database that cannot answer leaves the last values in place).
    public var scrapeCollector: @Sendable () async -> Void {
        let (database, metrics, services) = (self.database, self.metrics, self.measuredBacklog)
        SystemBacklog.describe(metrics)
        return {
            guard let backlog = try? await SystemBacklog.measure(database, services: services) else { return }
            backlog.record(into: metrics)
        }
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
