import Contracts
import Foundation
import HTTPRouting
import Kafka
import Lifecycle
import Postgres
import Projection
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime
import Synchronization
import UserErasure
import WebSocketServer

/// realtime-notifier: a Supabase-Realtime-compatible WebSocket fan-out on port 8084 that
/// numbers every channel event and replays what a client missed.
///
/// Parts: the WebSocket server (which also answers the HTTP routes on the same port), the
/// sequencer (a projection over the source topics), this instance's consumer of
/// `realtime.sequenced.v1`, and the maintenance loop (outbox re-publish, age trimming,
/// idle sockets, gauges).
public struct RealtimeNotifierService: Sendable {
    public static let migrations = ProjectionSchema.migrations + RealtimeSchema.migrations

    let context: ServiceContext
    let configuration: RealtimeConfiguration
    let environment: RealtimeEnvironment
    let delegate: RealtimeSocketDelegate
    let history: ChannelHistory
    let publisher: SequencedPublisher
    let ownProducer: KafkaProducer?
    /// Called with the bound port once the WebSocket server listens (tests bind port 0).
    public var onListening: @Sendable (Int) -> Void = { _ in }

    public init(context: ServiceContext, configuration: RealtimeConfiguration) {
        self.context = context
        self.configuration = configuration
        let history = ChannelHistory(database: context.database)
        let hub = SubscriptionHub(history: history, maxPending: configuration.maxCatchUpBuffer, logger: context.logger)
        let authorizer = ChannelAuthorizer(codec: context.authenticator.codec, database: context.database,
                                           publishableKeys: configuration.publishableKeys)
        let environment = RealtimeEnvironment(configuration: configuration, authorizer: authorizer, hub: hub,
                                              producer: context.producer, metrics: context.metrics, logger: context.logger)
        self.history = history
        self.environment = environment
        self.delegate = RealtimeSocketDelegate(environment: environment)
        // Sequenced events go out on a producer of their own with no linger: they are on every
        // event's path to the sockets (the shared producer, which batches, is the fallback).
        let sequencedProducer = try? KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: context.configuration.kafkaBrokers,
                                                      clientID: "\(context.name)-sequenced", deliveryTimeout: .seconds(10),
                                                      lingerMilliseconds: 0, extra: RealtimeConfiguration.lowLatencySockets),
            logger: context.logger)
        self.ownProducer = sequencedProducer
        self.publisher = SequencedPublisher(producer: sequencedProducer ?? context.producer, database: context.database,
                                            topic: configuration.sequencedTopic, logger: context.logger)
    }

    /// The hub of this instance's sockets (metrics and tests).
    public var hub: SubscriptionHub { environment.hub }

    public func parts() -> ServiceParts {
        let sequencer = makeSequencer()
        let live = LiveEventConsumer(bootstrapServers: context.configuration.kafkaBrokers, topic: configuration.sequencedTopic,
                                     groupID: "realtime-live-\(configuration.instanceID)",
                                     consumerProperties: configuration.consumerProperties(common: context.configuration.kafkaConsumerProperties),
                                     hub: environment.hub,
                                     deadLetters: context.producer, metrics: context.metrics, logger: context.logger)
        let maintenance = RealtimeMaintenance(database: context.database, publisher: publisher, hub: environment.hub,
                                              configuration: configuration, logger: context.logger)
        let erasure = UserErasure(service: RealtimeErasure.service, context: context, step: .sql(RealtimeErasure.statements)).parts()
        let delegate = self.delegate
        let metrics = context.metrics
        metrics.describe("realtime_connections", type: "gauge", help: "Open WebSocket connections.")
        metrics.describe("realtime_subscriptions", type: "gauge", help: "Channel subscriptions on this instance.")
        metrics.describe("realtime_messages_delivered_total", type: "counter", help: "Broadcasts queued to sockets since start.")
        // The live consumer's dead letters, counted as the projections count theirs (present from the start).
        metrics.describe("projection_dead_letters_total", type: "counter", help: "Records sent to a dead-letter topic.")
        metrics.increment("projection_dead_letters_total", by: 0, labels: ["group": live.groupID])
        let hub = environment.hub
        var router = CatchUpRoutes.router(authenticator: context.authenticator, authorizer: environment.authorizer, history: history)
        router.merge(BroadcastRoutes.router(authenticator: context.authenticator, producer: context.producer,
                                            topic: configuration.broadcastsTopic))
        return ServiceParts(
            router: router,
            background: [
                ClosureService(name: "realtime-live") { try await live.run() },
                ClosureService(name: "realtime-sequencer") { try await sequencer.run() },
                ClosureService(name: "realtime-maintenance") { try await maintenance.run() },
                PeriodicTask(name: "realtime-sockets", every: .seconds(1), failure: "socket maintenance failed", logger: context.logger) {
                    delegate.closeIdle()
                    delegate.closeErased()
                    metrics.set("realtime_connections", Double(delegate.sessionCount))
                    metrics.set("realtime_subscriptions", Double(hub.subscriptionCount))
                    metrics.setTotal("realtime_messages_delivered_total", Double(hub.deliveredCount))
                },
            ] + erasure.background,
            onShutdown: { [ownProducer, publisher] in
                await publisher.shutdown()
                await ownProducer?.shutdown()
            },
            httpServer: { router in makeServerService(router: router) },
            readiness: [ReadinessCheck(name: "sequencer-consumer") { !sequencer.isAssignmentStalled }] + erasure.readiness)
    }

    public func makeSequencer() -> ProjectionRunner<ChannelSequencer> {
        var runner = ProjectionRunnerConfiguration(
            bootstrapServers: context.configuration.kafkaBrokers, groupID: configuration.sequencerGroupID,
            topics: [configuration.transcodeStatusTopic, configuration.transcodeRequestsTopic, configuration.roomUploadsTopic,
                     configuration.progressTopic, configuration.broadcastsTopic, configuration.interactionsTopic],
            maxBatchRecords: configuration.maxBatchRecords, maxBatchWait: configuration.maxBatchWait)
        runner.consumerProperties = configuration.consumerProperties(common: context.configuration.kafkaConsumerProperties)
        return ProjectionRunner(
            projection: ChannelSequencer(configuration: configuration, publisher: publisher), configuration: runner, context: context)
    }

    /// The WebSocket server (with `router` on the same port) as a service.
    func makeServerService(router: Router) -> any Service {
        var serverConfiguration = WebSocketServerConfiguration(
            host: context.configuration.httpHost, port: context.configuration.httpPort,
            maxQueuedMessages: configuration.maxQueuedMessages, maxQueuedBytes: configuration.maxQueuedBytes)
        serverConfiguration.coalescedWriteBytes = configuration.coalescedWriteBytes
        let server = WebSocketServer(configuration: serverConfiguration, delegate: delegate, httpRouter: router, logger: context.logger)
        let onListening = self.onListening
        let logger = context.logger
        let (sessions, catchUps) = (delegate.sessionTasks, environment.hub.catchUps)
        return ClosureService(name: "realtime-websocket") {
            // The sockets' sessions and their catch-ups end with the server: once it stopped
            // (every socket closed), those still running are cancelled and waited for.
            try await catchUps.scope {
                try await sessions.scope {
                    try server.start()
                    logger.info("listening", metadata: ["http.port": String(server.port)])
                    onListening(server.port)
                    try await server.run()
                }
            }
        }
    }
}
