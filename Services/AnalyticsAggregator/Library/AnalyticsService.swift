import Contracts
import Foundation
import HTTPTypes
import Projection
import ServiceRuntime

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
        AnalyticsRoutes(readModel: AnalyticsReadModel(database: context.database), authenticator: context.authenticator,
                        configuration: configuration, clock: clock)
    }

    public func makeRunner() -> ProjectionRunner<AnalyticsProjection> {
        ProjectionRunner(
            projection: AnalyticsProjection(),
            configuration: ProjectionRunnerConfiguration(
                bootstrapServers: context.configuration.kafkaBrokers, groupID: configuration.groupID,
                topics: [configuration.topic], maxBatchRecords: configuration.batchSize, maxBatchWait: configuration.batchWait,
                sessionTimeout: configuration.sessionTimeout),
            database: context.database, deadLetters: context.producer, metrics: context.metrics, logger: context.logger)
    }

    public func parts() -> ServiceParts {
        let runner = makeRunner()
        let erasure = UserErasure(service: AnalyticsErasure.service, context: context, step: .sql(AnalyticsErasure.statements)).parts()
        return ServiceParts(router: routes.router(),
                            background: [ClosureService(name: "analytics-projection") { try await runner.run() }] + erasure.background,
                            readiness: [ReadinessCheck(name: "analytics-consumer") { !runner.isAssignmentStalled }] + erasure.readiness)
    }
}
