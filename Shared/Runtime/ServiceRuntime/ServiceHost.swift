import Auth
import Foundation
import HTTPRouting
import HTTPServer
import Kafka
import Lifecycle
import Postgres
import PrometheusMetrics
import ServiceLogging
import Settings

/// An HTTP server as a `Service`: the service's routes plus `/healthz`, `/readyz` and
/// `/metrics`, with request counts and latencies recorded.
public struct HTTPService: Service {
    public let name: String
    let configuration: HTTPServerConfiguration
    let router: Router
    let metrics: MetricsRegistry
    let logger: Logger
    /// Called with the bound port once the server listens (tests bind port 0).
    let onListening: @Sendable (Int) -> Void

    public init(name: String, configuration: HTTPServerConfiguration, router: Router, readiness: [ReadinessCheck],
                metrics: MetricsRegistry, logger: Logger, onListening: @escaping @Sendable (Int) -> Void = { _ in },
                collect: @escaping @Sendable () async -> Void = {}) {
        var all = router
        all.merge(HealthRoutes.router(service: name, checks: readiness, metrics: metrics, collect: collect))
        self.name = name
        self.configuration = configuration
        self.router = all
        self.metrics = metrics
        self.logger = logger
        self.onListening = onListening
        metrics.describe("http_requests_total", type: "counter", help: "HTTP requests answered, by route pattern, method and status.")
        metrics.describe("http_request_duration_seconds", type: "histogram",
                         help: "Time from a complete request to its response, by service and route pattern.")
    }

    public func run() async throws {
        let metrics = self.metrics
        let service = name
        let router = self.router
        let logger = self.logger
        let server = HTTPServer(configuration: configuration, router: router, logger: logger) { request, response, elapsed in
            // The route the server resolved once the headers were in; a request answered before
            // that (a 503 while shutting down, a refused path) is matched here.
            let pattern = if let found = request.route { found.pattern } else { router.pattern(for: request.method, path: request.path) }
            let route = pattern ?? "unmatched"
            metrics.increment("http_requests_total", labels: ["service": service, "route": route, "method": request.method.rawValue,
                                                              "status": String(response.status.rawValue)])
            let seconds = elapsed.timeInterval
            metrics.observe("http_request_duration_seconds", seconds, labels: ["service": service, "route": route])
            // A request of a sampled trace leaves one line: where the trace entered this service
            // (the router answers every request's trace; only a sampled one, flags 01, is parsed).
            if let answered = response.headers[TraceContext.responseHeader], answered.hasSuffix("-01"),
               let trace = TraceContext(traceparent: answered) {
                logger.info("traced request answered", metadata: [
                    "trace_id": trace.traceID, "http.method": request.method.rawValue, "http.route": route,
                    "http.status": String(response.status.rawValue), "http.duration_ms": String(Int((seconds * 1000).rounded()))])
            }
        }
        try server.start()
        onListening(server.port)
        try await server.run()
    }
}

/// The entry point shared by the service executables.
public enum ServiceHost {
    /// Reads the environment, connects to Postgres and Kafka, applies `migrations`, builds
    /// the service and runs it with its HTTP server until SIGTERM/SIGINT.
    public static func main(
        name: String, defaultPort: Int, migrations: [PostgresMigration],
        build: @Sendable (ServiceContext, inout EnvironmentReader) throws -> ServiceParts
    ) async -> Int32 {
        var reader = EnvironmentReader()
        let configuration = CommonConfiguration.read(from: &reader, defaultPort: defaultPort)
        var logger = Logger(label: name, level: configuration.logLevel)
        logger[metadataKey: "service"] = name
        do {
            try reader.validate()
            let context = try await makeContext(name: name, configuration: configuration, metrics: MetricsRegistry(), logger: logger)
            _ = try await PostgresMigrator(migrations: migrations, logger: logger).migrate(context.database)
            let parts = try build(context, &reader)
            try reader.validate()
            try await run(context: context, parts: parts)
            await context.producer.shutdown()
            await context.database.close()
            await context.authenticator.codec.keys?.shutdown()
            return 0
        } catch {
            logger.critical("service failed to run", metadata: ["error": "\(error)"])
            FileHandle.standardError.write(Data("\(name): \(error)\n".utf8))
            return 1
        }
    }

    /// Opens the shared clients for one service (or for all of them, in `backbone dev`), and
    /// reads the token key set (`JWT_JWKS_FILE`, `JWT_JWKS_URL`) if one is configured.
    /// - Parameter sender: what the services send through, given the producer: the producer
    ///   itself, or a decorator a particular broker needs (`backbone dev`'s journal).
    public static func makeContext(name: String, configuration: CommonConfiguration, metrics: MetricsRegistry,
                                   sender: (KafkaProducer) -> any KafkaRecordSender = { $0 },
                                   logger: Logger) async throws -> ServiceContext {
        let database = PostgresClient(
            configuration: PostgresConfiguration(url: configuration.databaseURL, maxConnections: configuration.databasePoolSize,
                                                 applicationName: name),
            logger: logger)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: configuration.kafkaBrokers, clientID: name,
                                                      deliveryTimeout: .seconds(10)),
            logger: logger)
        let admin = try KafkaAdmin(bootstrapServers: configuration.kafkaBrokers, clientID: "\(name)-admin", timeout: .seconds(3), logger: logger)
        let keys = configuration.tokenVerification.keySet.map { JSONWebKeyring(source: $0, logger: logger) }
        try await keys?.start()
        return ServiceContext(name: name, configuration: configuration, database: database, producer: sender(producer),
                              admin: admin, metrics: metrics, logger: logger, keys: keys)
    }

    /// Runs a built service: its HTTP server first, then its background loops; stops them
    /// in reverse order on a signal or when one fails.
    public static func run(context: ServiceContext, parts: ServiceParts, handlesSignals: Bool = true) async throws {
        let http = httpService(context: context, parts: parts)
        do {
            try await ServiceGroup(services: [http] + parts.background + [HeapTrim.service(logger: context.logger)],
                                   handlesSignals: handlesSignals,
                             shutdownTimeout: context.configuration.shutdownTimeout, logger: context.logger).run()
        } catch {
            await parts.onShutdown()
            throw error
        }
        await parts.onShutdown()
    }

    /// The service answering HTTP on `context.configuration.httpPort`: an `HTTPService`, or
    /// the service's own server (`parts.httpServer`) given its routes plus the health routes.
    public static func httpService(context: ServiceContext, parts: ServiceParts) -> any Service {
        var router = parts.router
        router.cors = CORSPolicy(allowedOrigins: context.configuration.corsAllowedOrigins)
        router.traceSampleRatio = context.configuration.traceSampleRatio
        if let makeServer = parts.httpServer {
            router.merge(HealthRoutes.router(service: context.name, checks: context.readinessChecks + parts.readiness, metrics: context.metrics,
                                             collect: context.scrapeCollector))
            return makeServer(router)
        }
        return HTTPService(
            name: context.name,
            configuration: HTTPServerConfiguration(host: context.configuration.httpHost, port: context.configuration.httpPort),
            router: router, readiness: context.readinessChecks + parts.readiness, metrics: context.metrics, logger: context.logger,
            collect: context.scrapeCollector)
    }
}
