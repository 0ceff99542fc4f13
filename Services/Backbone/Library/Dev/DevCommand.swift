import Auth
import Contracts
import DevAuth
import DevInfrastructure
import Foundation
import HTTPServer
import Hashing
import Kafka
import Lifecycle
import ObjectStore
import Postgres
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime
import Settings
import UserErasure

/// `backbone dev [--infra-only] [--port-offset N]`: the whole system on one machine with no
/// Docker — an embedded Kafka broker (librdkafka's mock cluster on loopback TCP), a private
/// PostgreSQL cluster under `.backbone/` unless `DATABASE_URL` is given, a private SeaweedFS
/// (S3, under `.backbone/seaweedfs`) unless `S3_ENDPOINT` is given, migrations, every service
/// in this process on its default port, and the one origin the apps call (`APP_BASE_URL`, port
/// 8000: nginx with compose's gateway configuration). Ctrl-C stops everything.
enum DevCommand {
    /// The realtime notifier's, on every event's path to the sockets (`REALTIME_FETCH_WAIT_MS`).
    static let realtimeFetchWait = Duration.milliseconds(5)

    static func run(_ arguments: [String], logger: Logger) async throws -> Int32 {
        let args = try CommandLineArguments(arguments, valued: ["port-offset", "brokers", "drain-seconds"])
        try args.only(["infra-only", "port-offset", "brokers", "drain-seconds"])
        let portOffset = try args.int("port-offset") ?? 0
        let drainSeconds = try args.int("drain-seconds") ?? 20
        guard (0...3600).contains(drainSeconds) else {
            throw CommandLineArguments.UsageError(description: "--drain-seconds must be 0…3600 (seconds to wait at exit for the consumers)")
        }
        // Until the stack handles signals itself (its service group, below), Ctrl-C, SIGTERM and
        // a closed terminal end it at once — also when whatever started it left them ignored (a
        // shell's background job, a test runner that handled them itself): the watchdog then
        // stops every server already started.
        for number in [SIGINT, SIGTERM, SIGHUP] { signal(number, SIG_DFL) }
        try ServiceCatalog.validateSettings()
        let home = DevEnvironment.directory
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let lock = try DevFolderLock.acquire(in: home, logger: logger)
        // Before any server: whatever ends this process, they stop with it.
        try DevWatchdog.start(home: home, lockDescriptor: lock, logger: logger)
        // A shell that sourced the previous run's dev.env carries its DATABASE_URL and S3_*,
        // which name that run's private servers: they are made again, not connected to.
        let (environment, ignored) = DevEnvironment.withoutPreviousRun(ProcessInfo.processInfo.environment,
                                                                      previous: DevEnvironment.read())
        if !ignored.isEmpty {
            logger.notice("settings left out: they are the previous run's, from \(DevEnvironment.path)",
                          metadata: ["settings": "\(ignored.joined(separator: ","))"])
        }
        // The previous run's dev.env names servers that stopped with it: gone until this run's
        // servers listen, so that its presence means "up".
        try? FileManager.default.removeItem(atPath: DevEnvironment.path)

        // JWT_JWKS_FILE/URL, JWT_ISSUER, JWT_AUDIENCE, CORS_ALLOWED_ORIGINS and TRACE_SAMPLE_RATIO
        // as the services read them alone, and the consumers' fetch waits, checked before
        // anything starts. The embedded broker answers a waiting fetch only when the wait ends,
        // never when a record arrives (a Kafka broker does): short waits, so that no read model
        // trails by librdkafka's 500 ms (docs/kafka.md). The services of other processes get
        // them from dev.env.
        var settings = EnvironmentReader(environment)
        var tokenVerification = TokenVerificationSettings.read(from: &settings)
        let authConfiguration = DevAuth.Configuration.read(from: &settings)
        let corsAllowedOrigins = CommonConfiguration.readCORSAllowedOrigins(from: &settings)
        let traceSampleRatio = CommonConfiguration.readTraceSampleRatio(from: &settings)
        let fetchWait = settings.milliseconds("KAFKA_FETCH_WAIT_MS", default: EmbeddedKafkaCluster.fetchWait, range: 0...300_000)
        let realtimeFetchWait = settings.milliseconds("REALTIME_FETCH_WAIT_MS", default: Self.realtimeFetchWait,
                                                      range: 0...300_000)
        try settings.validate()
        setenv("REALTIME_FETCH_WAIT_MS", String(realtimeFetchWait.wholeMilliseconds), 1)

        // Kafka: the embedded broker, with every topic created.
        let cluster = try EmbeddedKafkaCluster(brokers: try args.int("brokers") ?? 1, logger: logger)
        for topic in Topics.all { try cluster.createTopic(topic.name, partitions: topic.partitions) }
        logger.info("embedded Kafka broker started", metadata: ["kafka.brokers": cluster.bootstrapServers])

        // PostgreSQL: DATABASE_URL, or a private cluster from Debian's binaries.
        var privateCluster: PrivatePostgresCluster?
        let databaseURL: String
        if let url = environment["DATABASE_URL"], !url.isEmpty {
            databaseURL = url
        } else {
            let pg = PrivatePostgresCluster(directory: home + "/postgres", logger: logger)
            databaseURL = try await pg.start()
            privateCluster = pg
            logger.info("private PostgreSQL started", metadata: ["pg.directory": pg.clusterDirectory])
        }

        // S3: S3_ENDPOINT and its settings, or a private SeaweedFS on loopback.
        var seaweed: SeaweedFSServer?
        let storage: S3Configuration
        if let endpoint = environment["S3_ENDPOINT"], !endpoint.isEmpty {
            var reader = EnvironmentReader(environment)
            storage = S3Configuration.read(from: &reader)
            try reader.validate()
        } else {
            let server = SeaweedFSServer(directory: home + "/seaweedfs", s3Port: 8333 + portOffset, logger: logger)
            do { storage = try await server.start() } catch {
                await privateCluster?.stop()
                throw error
            }
            seaweed = server
        }
        // The services read their S3_* settings from the environment, as they do when run alone.
        for (key, value) in storage.environment { setenv(key, value, 1) }
        setenv("DATABASE_URL", databaseURL, 1)
        // Upload URLs name the one origin (the nginx gateway below), as compose's do.
        if environment["APP_BASE_URL"].map({ $0.isEmpty }) ?? true {
            setenv("APP_BASE_URL", "http://127.0.0.1:\(8000 + portOffset)", 1)
        }

        // The embedded auth server's signing key, the same across restarts; unless told to check
        // another provider's, the services verify its ES256 tokens through its key set.
        let authKey = try DevAuth.prepareKey(home: home)
        let authKeySet = tokenVerification.keySet == nil ? DevAuth.keySetPath(home: home) : nil
        if let authKeySet { tokenVerification.keySet = .file(authKeySet) }
        let secret = try environment["JWT_SECRET"].flatMap { $0.isEmpty ? nil : $0 } ?? persistentSecret(in: home)
        let metrics = MetricsRegistry()
        var configuration = CommonConfiguration(kafkaBrokers: cluster.bootstrapServers, databaseURL: databaseURL,
                                                jwtSecret: secret, httpHost: "127.0.0.1", httpPort: 0, logLevel: logger.logLevel)
        configuration.tokenVerification = tokenVerification
        configuration.corsAllowedOrigins = corsAllowedOrigins
        configuration.traceSampleRatio = traceSampleRatio
        configuration.kafkaFetchWait = fetchWait
        configuration.kafkaClusterIdentity = EmbeddedKafkaCluster.clusterIdentity
        let runningGroups = RunningConsumerGroups()
        let entries = args.flag("infra-only") ? [] : ServiceCatalog.entries
        // The embedded broker keeps records in memory only: the stack's own services produce
        // through a journal in PostgreSQL, and so do the operator commands that produce to it
        // (services of other processes, with --infra-only, do not).
        let journalDatabase = PostgresClient(configuration: PostgresConfiguration(url: databaseURL, maxConnections: 4,
                                                                                  applicationName: "backbone-dev-journal"),
                                             logger: logger)
        try await DevBrokerJournal.prepare(journalDatabase)
        try await DevRecovery.prepare(journalDatabase)
        let brokerIdentity = try await DevBrokerJournal.clusterIdentity(brokers: cluster.bootstrapServers, logger: logger)
        if brokerIdentity == nil {
            logger.warning("the embedded broker reports no cluster id: its records are not journaled and a kill -9 loses the unprocessed ones")
        }
        let journal = entries.isEmpty ? nil : brokerIdentity.map { DevBrokerJournal(database: journalDatabase, cluster: $0) }
        let sender: (KafkaProducer) -> any KafkaRecordSender = { producer in
            guard let journal else { return producer }
            return JournalingProducer(producer: producer, journal: journal)
        }
        let context = try await ServiceHost.makeContext(name: "backbone-dev", configuration: configuration, metrics: metrics,
                                                        sender: sender, logger: logger)
        let applied = try await PostgresMigrator(migrations: ServiceCatalog.allMigrations, logger: logger).migrate(context.database)
        let authApplied = try await PostgresMigrator(migrations: DevAuthSchema.migrations, logger: logger).migrate(context.database)
        if !authApplied.isEmpty { logger.info("auth migrations applied", metadata: ["pg.versions": authApplied.map(String.init).joined(separator: ",")]) }
        if !applied.isEmpty { logger.info("migrations applied", metadata: ["pg.versions": applied.map(String.init).joined(separator: ",")]) }
        // The broker is new and empty: what an earlier run left in the journal goes to it before
        // any consumer starts; what an earlier run accepted and never kept is gone.
        try await DevRecovery.recover(database: context.database, producer: context.producer,
                                      readingEventsTopic: Topics.readingEvents, currentCluster: brokerIdentity, logger: logger)
        // From here on, `backbone republish` and `dlq replay` journal what they send to this broker.
        try await journal?.register()
        var values: [(String, String)] = [("KAFKA_BROKERS", cluster.bootstrapServers), ("DATABASE_URL", databaseURL), ("JWT_SECRET", secret),
                                          ("KAFKA_FETCH_WAIT_MS", String(configuration.kafkaFetchWait?.wholeMilliseconds ?? 0)),
                                          ("REALTIME_FETCH_WAIT_MS", String(realtimeFetchWait.wholeMilliseconds)),
                                          ("KAFKA_CLUSTER_IDENTITY", EmbeddedKafkaCluster.clusterIdentity.rawValue)]
        // The origins and the sampling given: services run apart from this process (with
        // --infra-only) answer the same browsers and sample as these do.
        if environment["CORS_ALLOWED_ORIGINS"] != nil {
            values.append(("CORS_ALLOWED_ORIGINS", corsAllowedOrigins.joined(separator: ",")))
        }
        if environment["TRACE_SAMPLE_RATIO"] != nil { values.append(("TRACE_SAMPLE_RATIO", String(traceSampleRatio))) }
        if let authKeySet { values.append(("JWT_JWKS_FILE", authKeySet)) }
        values += storage.environment.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let made = (privateCluster != nil ? ["postgres"] : []) + (seaweed != nil ? ["s3"] : [])
        values.append((DevEnvironment.madeHereKey, made.joined(separator: ",")))
        // Order: every consumer and loop, the journal's pruner, the drain, then the HTTP
        // services. Shutdown goes in reverse: requests stop first, the drain waits for the
        // consumers to process what was accepted (the embedded broker forgets it), the pruner
        // drops the copies of what they processed, then the consumers stop.
        var background: [any Service] = []
        var http: [any Service] = []
        var parts: [ServiceParts] = []
        for entry in entries {
            let port = entry.defaultPort + portOffset
            var serviceConfiguration = configuration
            serviceConfiguration.httpPort = port
            // Loopback unless told otherwise (HTTP_HOST=0.0.0.0 lets a phone on the network in).
            serviceConfiguration.httpHost = environment["HTTP_HOST"].flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1"
            var serviceContext = ServiceContext(name: entry.name, configuration: serviceConfiguration, database: context.database,
                                                producer: context.producer, admin: context.admin, metrics: metrics, logger: logger,
                                                keys: context.authenticator.codec.keys)
            // One registry serves every service's /metrics here: each scrape measures the whole backlog.
            serviceContext.scrapeCollector = SystemBacklog.collector(database: context.database, metrics: metrics, services: nil)
            serviceContext.consumerGroupObserver = runningGroups
            let built = entry.build(serviceContext)
            parts.append(built)
            http.append(ServiceHost.httpService(context: serviceContext, parts: built))
            background.append(contentsOf: built.background)
            values.append((entry.urlKey, "http://127.0.0.1:\(port)"))
        }
        // Sign-in (Supabase Auth's API, `/auth/v1` at the origin), on its own loopback port, and
        // its part in account deletion.
        let authPort = DevAuth.defaultPort + portOffset
        let auth = DevAuth.server(configuration: authConfiguration, key: authKey, origin: "http://127.0.0.1:\(8000 + portOffset)",
                                  database: context.database, logger: logger)
        var authContext = ServiceContext(name: DevAuth.erasureService, configuration: configuration, database: context.database,
                                         producer: context.producer, admin: context.admin, metrics: metrics, logger: logger,
                                         keys: context.authenticator.codec.keys)
        authContext.scrapeCollector = SystemBacklog.collector(database: context.database, metrics: metrics, services: nil)
        authContext.consumerGroupObserver = runningGroups
        if !entries.isEmpty {
            background += UserErasure(service: DevAuth.erasureService, context: authContext, step: DevAuth.erasure).parts().background
        }
        http.append(HTTPService(name: DevAuth.erasureService,
                                configuration: HTTPServerConfiguration(host: environment["HTTP_HOST"].flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1",
                                                                       port: authPort),
                                router: auth.router(allowedOrigins: corsAllowedOrigins), readiness: [], metrics: metrics, logger: logger))
        values.append(("AUTH_URL", "http://127.0.0.1:\(authPort)"))
        // One origin for the apps, as compose's gateway (nginx, the same configuration) gives.
        var gateway: GatewayServer?
        if !entries.isEmpty {
            let server = GatewayServer(directory: home + "/gateway", port: 8000 + portOffset,
                                       upstreams: Dictionary(uniqueKeysWithValues: entries.map { ($0.name, $0.defaultPort + portOffset) }
                                                                 + [("auth", authPort)]),
                                       logger: logger)
            do {
                values.insert((DevEnvironment.appBaseURLKey, try await server.start()), at: 0)
                gateway = server
            } catch {
                logger.warning("the one origin (the nginx gateway) is not served; each service still answers on its own port",
                               metadata: ["error": "\(error)"])
            }
        }
        var services = background + [HeapTrim.service(logger: logger)]
        if let journal {
            services.append(journal.pruner(readers: runningGroups, logger: logger))
            services.append(DevRecovery.marker(cluster: journal.cluster, topic: Topics.readingEvents, database: journalDatabase,
                                               logger: logger))
        }
        if entries.isEmpty {
            services.append(ClosureService(name: "infrastructure") {
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            })
        } else if drainSeconds > 0 {
            services.append(PipelineDrain(database: context.database, admin: context.admin, groups: runningGroups,
                                          limit: .seconds(drainSeconds), journaled: journal != nil, logger: logger))
        }
        services += http
        // dev.env and the banner once every service listens and every consumer group has
        // formed, so that whatever reads dev.env (a script, the tests, `backbone demo`, an app)
        // finds the URLs it names answering and what it sends read at once (a room's channel
        // joinable right after upload-init).
        let ports = entries.map { $0.defaultPort + portOffset } + [authPort]
        let sampleCatalogWriter = zip(entries, parts).first { $0.0.name == "ingest" }?.1.router
        let infraOnly = entries.isEmpty
        services.append(ClosureService(name: "dev-announce") { [values] in
            let deadline = ContinuousClock.now + .seconds(60)
            while ports.contains(where: LoopbackPort.isFree), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let formed = ContinuousClock.now + .seconds(30)
            while !runningGroups.forming.isEmpty, ContinuousClock.now < formed {
                try await Task.sleep(for: .milliseconds(20))
            }
            let forming = runningGroups.forming
            if !forming.isEmpty {
                logger.warning("consumer groups still forming; what is sent now is read once they have",
                               metadata: ["kafka.groups": forming.map(\.groupID).joined(separator: ",")])
            }
            // The learning app's sample path, through the write edge (a repeat changes nothing).
            if let ingest = sampleCatalogWriter {
                let failures = try await SampleLearningPath.load(into: ingest, serviceToken: JWTCodec(secret: secret)
                    .issue(userID: "dev-service", ttl: 600, role: "service"))
                if !failures.isEmpty { logger.warning("the sample learning path was not loaded", metadata: ["error": failures.joined(separator: "; ")]) }
            }
            try DevEnvironment.write(values)
            printBanner(values: values, secret: secret, infraOnly: infraOnly)
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        })
        var failure: (any Error)?
        do {
            // SIGHUP too: closing the terminal stops the stack the way Ctrl-C does.
            try await ServiceGroup(services: services, signals: [SIGTERM, SIGINT, SIGHUP],
                                   shutdownTimeout: .seconds(drainSeconds + 10), logger: logger).run()
        } catch {
            failure = error
        }
        await gateway?.stop()
        for part in parts { await part.onShutdown() }
        await context.producer.shutdown()
        await context.database.close()
        await journalDatabase.close()
        await privateCluster?.stop()
        await seaweed?.stop()
        DevWatchdog.release()
        cluster.shutdown()
        logger.info("dev stack stopped")
        if let failure { throw failure }
        return 0
    }

    /// A random secret kept in `.backbone/jwt-secret`, so tokens survive restarts.
    static func persistentSecret(in home: String) throws -> String {
        let path = home + "/jwt-secret"
        if let existing = try? String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines),
           existing.utf8.count >= 16 {
            return existing
        }
        let secret = Digest.hex(Digest.randomBytes(32))
        try secret.write(toFile: path, atomically: true, encoding: .utf8)
        return secret
    }

    static func printBanner(values: [(String, String)], secret: String, infraOnly: Bool) {
        let codec = JWTCodec(secret: secret)
        var lines = ["", "Zhixi Backbone dev stack is up\(infraOnly ? " (infrastructure only)" : "")", ""]
        let shown = values.filter { $0.0 != "JWT_SECRET" && $0.0 != "S3_SECRET_ACCESS_KEY" }
        let width = shown.map(\.0.count).max() ?? 0
        for (key, value) in shown { lines.append("  \(key.padding(toLength: width, withPad: " ", startingAt: 0)) \(value)") }
        lines += [
            "",
            "  settings written to \(DevEnvironment.path) (set -a; . \(DevEnvironment.path); set +a)",
            "  user token (dev-user, 24 h):",
            "    \(codec.issue(userID: "dev-user", ttl: 86_400))",
            "  service token (catalog maintenance, 24 h):",
            "    \(codec.issue(userID: "dev-service", ttl: 86_400, role: "service"))",
            "  the app's anon key (supabaseKey beside APP_BASE_URL; the same at every start):",
            "    \(codec.anonKey)",
            "  sign-in (Supabase Auth's API): APP_BASE_URL/auth/v1 — e-mail and password, Sign in with Apple",
            "    (AUTH_APPLE_CLIENT_IDS); its ES256 tokens work on every service",
            "",
            "  Ctrl-C stops everything.",
            "",
        ]
        FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    }
}
