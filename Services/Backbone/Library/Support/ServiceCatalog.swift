import AnalyticsAggregator
import Foundation
import Ingest
import Postgres
import ProgressProjector
import Projection
import RealtimeNotifier
import ServiceRuntime
import Settings
import TranscodeWorker

/// Every service `backbone dev` runs and `backbone migrate` migrates, with its default port.
struct ServiceCatalog {
    struct Entry: Sendable {
        let name: String
        let defaultPort: Int
        let urlKey: String
        let migrations: [PostgresMigration]
        let build: @Sendable (ServiceContext) -> ServiceParts
    }

    static let entries: [Entry] = [
        Entry(name: "ingest", defaultPort: 8080, urlKey: "INGEST_URL", migrations: IngestService.migrations) { context in
            var env = EnvironmentReader()
            return IngestService(context: context, configuration: .read(from: &env),
                                 objects: IngestService.objectStore(from: &env)).parts()
        },
        Entry(name: "progress-projector", defaultPort: 8081, urlKey: "PROGRESS_URL",
              migrations: ProgressProjectorService.migrations) { context in
            var env = EnvironmentReader()
            return ProgressProjectorService(context: context, configuration: .read(from: &env)).parts()
        },
        Entry(name: "analytics-aggregator", defaultPort: 8082, urlKey: "ANALYTICS_URL",
              migrations: ProjectionSchema.migrations + AnalyticsSchema.migrations) { context in
            var env = EnvironmentReader()
            return AnalyticsService(context: context, configuration: .read(from: &env)).parts()
        },
        Entry(name: "transcode-worker", defaultPort: 8083, urlKey: "TRANSCODE_URL",
              migrations: TranscodeWorkerService.migrations) { context in
            var env = EnvironmentReader()
            return TranscodeWorkerService.make(context: context, env: &env).parts()
        },
        Entry(name: "realtime-notifier", defaultPort: 8084, urlKey: "REALTIME_URL",
              migrations: RealtimeNotifierService.migrations) { context in
            var env = EnvironmentReader()
            return RealtimeNotifierService(context: context, configuration: .read(from: &env)).parts()
        },
    ]

    /// Reads every service's settings from `environment` exactly as its executable does; one
    /// error lists every missing or invalid value (each once), so `backbone dev` never falls
    /// back silently on a setting the executables would refuse.
    static func validateSettings(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError) {
        var env = EnvironmentReader(environment)
        _ = IngestConfiguration.read(from: &env)
        _ = ProgressConfiguration.read(from: &env)
        _ = AnalyticsConfiguration.read(from: &env)
        _ = RealtimeConfiguration.read(from: &env)
        _ = TranscodeConfiguration.read(from: &env)
        _ = TokenVerificationSettings.read(from: &env)
        _ = CommonConfiguration.readCORSAllowedOrigins(from: &env)
        _ = CommonConfiguration.readTraceSampleRatio(from: &env)
        _ = env.logLevel()
        do {
            try env.validate()
        } catch {
            var unique = error
            var seen = Set<String>()
            unique.problems = error.problems.filter { seen.insert($0).inserted }
            throw unique
        }
    }

    /// Every migration of every service, each version once, in order.
    static var allMigrations: [PostgresMigration] {
        var byVersion: [Int: PostgresMigration] = [:]
        for entry in entries { for m in entry.migrations { byVersion[m.version] = m } }
        return byVersion.values.sorted { $0.version < $1.version }
    }
}
