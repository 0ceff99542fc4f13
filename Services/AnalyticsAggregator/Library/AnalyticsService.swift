import Contracts
import Foundation
import HTTPRouting
import Lifecycle
import Postgres
import Projection
import ServiceLogging
import ServiceRuntime
import UserErasure

/// The analytics-aggregator: the projection runner on `reading.events.v2` (consumer group
/// `analytics-aggregator`) as a background service, and the query routes.
public struct AnalyticsService: Sendable {
    public let context: ServiceContext
    public let configuration: AnalyticsConfiguration
    let clock: @Sendable () -> Date

    public init(context: ServiceContext, configuration: AnalyticsConfiguration) {
        self.init(context: context, configuration: configuration, clock: { Date() })
    }

    /// With a clock for "today" (tests).
    public init(context: ServiceContext, configuration: AnalyticsConfiguration, clock: @escaping @Sendable () -> Date) {
        self.context = context
        self.configuration = configuration
        self.clock = clock
    }

    public var routes: AnalyticsRoutes {
        AnalyticsRoutes(readModel: AnalyticsReadModel(database: context.database), authenticator: context.authenticator, clock: clock)
    }

    public func makeRunner() -> ProjectionRunner<AnalyticsProjection> {
        ProjectionRunner(
            projection: AnalyticsProjection(streakThresholdSeconds: configuration.streakThresholdSeconds),
            configuration: ProjectionRunnerConfiguration(
                bootstrapServers: context.configuration.kafkaBrokers, groupID: configuration.groupID,
                topics: [configuration.topic], maxBatchRecords: configuration.batchSize, maxBatchWait: configuration.batchWait,
                sessionTimeout: configuration.sessionTimeout), context: context)
    }

    /// Brings the streak runs in line with the configured threshold before the first batch, so
    /// that the summary is right at once after the threshold changed even while no event arrives.
    /// Best effort: the batches check it too.
    func alignStreaks() async {
        let streaks = StreakRuns(thresholdSeconds: configuration.streakThresholdSeconds)
        do {
            let recomputed = try await context.database.withTransaction { connection in try await streaks.align(in: connection) }
            if recomputed {
                context.logger.info("streak runs recomputed for the configured threshold",
                                    metadata: ["threshold_seconds": "\(streaks.thresholdSeconds)"])
            }
        } catch {
            context.logger.warning("could not check the streak runs' threshold at start; the first batch will",
                                   metadata: ["error": "\(error)"])
        }
    }

    public func parts() -> ServiceParts {
        let runner = makeRunner()
        let erasure = UserErasure(service: AnalyticsErasure.service, context: context, step: .sql(AnalyticsErasure.statements)).parts()
        let learning = learningParts()
        var router = routes.router()
        router.merge(learning.router)
        return ServiceParts(router: router,
                            background: [ClosureService(name: "analytics-projection") {
                                await alignStreaks()
                                try await runner.run()
                            }] + learning.background + erasure.background,
                            readiness: [ReadinessCheck(name: "analytics-consumer") { !runner.isAssignmentStalled }] + learning.readiness
                                + erasure.readiness)
    }
}
