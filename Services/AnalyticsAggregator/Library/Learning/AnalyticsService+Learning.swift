import Contracts
import HTTPRouting
import Lifecycle
import Projection
import ServiceRuntime

extension AnalyticsService {
    /// The learning app's side of the aggregator: its routes, the projection runner on
    /// `learning.sessions.v1` (its own consumer group) and the relay of its push outbox.
    func learningParts() -> (router: Router, background: [any Service], readiness: [ReadinessCheck]) {
        let outbox = LearningProjection.outbox(database: context.database, producer: context.producer,
                                               topic: configuration.broadcastsTopic)
        let runner = makeLearningRunner(outbox: outbox)
        let relay = OutboxRelay(name: "learning-pushes", outbox: outbox, interval: configuration.learningOutboxInterval,
                                logger: context.logger)
        let routes = LearningRoutes(readModel: LearningReadModel(database: context.database),
                                    analytics: AnalyticsReadModel(database: context.database), authenticator: context.authenticator,
                                    clock: clock,
                                    model: configuration.ai.map { ChatCompletionsAnalyser(configuration: $0, logger: context.logger) })
        return (routes.router(),
                // The model calls a batch left out when its budget was spent end with the runner.
                [ClosureService(name: "analytics-learning") { try await runner.projection.analyser.calls.scope { try await runner.run() } },
                 ClosureService(name: "analytics-learning-outbox") { try await relay.run() }],
                [ReadinessCheck(name: "analytics-learning-consumer") { !runner.isAssignmentStalled }])
    }

    public func makeLearningRunner(outbox: KeyedRecordOutbox?) -> ProjectionRunner<LearningProjection> {
        ProjectionRunner(
            // The model, when one is configured, analyses the pipeline's sessions too (bounded per
            // batch, falling back to the built-in analyser).
            projection: LearningProjection(outbox: outbox,
                                           model: configuration.ai.map { ChatCompletionsAnalyser(configuration: $0, logger: context.logger) }),
            configuration: ProjectionRunnerConfiguration(
                bootstrapServers: context.configuration.kafkaBrokers, groupID: configuration.learningGroupID,
                topics: [configuration.learningTopic], maxBatchRecords: 500, maxBatchWait: configuration.batchWait,
                sessionTimeout: configuration.sessionTimeout), context: context)
    }
}
