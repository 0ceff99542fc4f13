import Contracts
import Foundation
import HTTPRouting
import Kafka
import Lifecycle
import ObjectStore
import Postgres
import Projection
import ServiceLogging
import ServiceRuntime
import Settings
import UserErasure

/// Settings of the transcode worker beyond the common ones.
public struct TranscodeConfiguration: Sendable {
    public var requestsTopic: String = Topics.roomTranscodeRequests
    public var statusTopic: String = Topics.roomTranscodeStatus
    /// Versions before their request (upload-init, abandonment): read by the room catalog only.
    public var uploadsTopic: String = Topics.roomUploads
    public var groupID: String = "transcode-worker"
    /// Jobs this process runs at once.
    public var concurrency: Int = 1
    /// How long a claim holds without renewal: a worker that died loses its job after this.
    public var lease: Duration = .seconds(30)
    /// How often an idle slot looks for a job it was not woken for (another instance's intake).
    public var pollInterval: Duration = .milliseconds(500)
    /// The longest a job waits after a transient failure before it is tried again.
    public var maxBackoff: Duration = .seconds(60)
    /// Attempts a version gets in all: the first and the owner's retries (seed `002_*` §6.4).
    public var maxAttempts: Int = 3
    /// How long the presigned output URLs of the catch-up query are valid.
    public var linkTTL: Duration = .seconds(900)
    /// How often the status relay looks for statuses left unpublished.
    public var outboxInterval: Duration = .seconds(2)
    public var sessionTimeout: Duration = .seconds(10)
    /// Where jobs download and write their files; each job uses its own folder, removed after.
    public var workDirectory: String = NSTemporaryDirectory()
    /// The most bytes one job may hold in its folder (downloads and outputs).
    public var maxJobBytes: Int64 = 512 * 1_024 * 1_024
    /// The room catalog's settings (`CATALOG_*`).
    public var catalog = CatalogConfiguration()

    public init() {}

    /// The topics the room catalog is projected from (its live consumer and `backbone rebuild
    /// catalog` read exactly these).
    public var catalogTopics: [String] { [requestsTopic, statusTopic, uploadsTopic] }
    /// CrowdRoom's social writes, and the consumer group of their read models (`SocialProjection`).
    public var interactionsTopic: String = Topics.roomInteractions
    public var socialGroupID: String = "room-social"
    /// The topics the social read models are projected from.
    public var socialTopics: [String] { [interactionsTopic, statusTopic] }

    /// `ROOM_TRANSCODE_REQUESTS_TOPIC`, `ROOM_TRANSCODE_STATUS_TOPIC`, `ROOM_UPLOADS_TOPIC`, `TRANSCODE_GROUP_ID`,
    /// `TRANSCODE_CONCURRENCY`, `TRANSCODE_LEASE_MS`, `TRANSCODE_POLL_MS`, `TRANSCODE_MAX_BACKOFF_MS`,
    /// `TRANSCODE_MAX_ATTEMPTS`, `TRANSCODE_LINK_TTL_SECONDS`, `TRANSCODE_OUTBOX_INTERVAL_MS`,
    /// `KAFKA_SESSION_TIMEOUT_MS`, `TRANSCODE_WORK_DIR`, `TRANSCODE_MAX_JOB_BYTES`.
    public static func read(from env: inout EnvironmentReader) -> TranscodeConfiguration {
        var c = TranscodeConfiguration()
        c.requestsTopic = env.string("ROOM_TRANSCODE_REQUESTS_TOPIC", default: c.requestsTopic)
        c.statusTopic = env.string("ROOM_TRANSCODE_STATUS_TOPIC", default: c.statusTopic)
        c.interactionsTopic = env.string("ROOM_INTERACTIONS_TOPIC", default: c.interactionsTopic)
        c.socialGroupID = env.string("SOCIAL_GROUP_ID", default: c.socialGroupID)
        c.uploadsTopic = env.string("ROOM_UPLOADS_TOPIC", default: c.uploadsTopic)
        c.groupID = env.string("TRANSCODE_GROUP_ID", default: c.groupID)
        c.concurrency = env.int("TRANSCODE_CONCURRENCY", default: c.concurrency, range: 1...64)
        c.lease = env.milliseconds("TRANSCODE_LEASE_MS", default: c.lease, range: 1_000...Int(Int32.max))
        c.pollInterval = env.loopInterval("TRANSCODE_POLL_MS", default: c.pollInterval)
        c.maxBackoff = env.loopInterval("TRANSCODE_MAX_BACKOFF_MS", default: c.maxBackoff)
        c.maxAttempts = env.int("TRANSCODE_MAX_ATTEMPTS", default: c.maxAttempts, range: 1...100)
        c.linkTTL = .seconds(env.int("TRANSCODE_LINK_TTL_SECONDS", default: 900, range: 1...604_800))
        c.outboxInterval = env.loopInterval("TRANSCODE_OUTBOX_INTERVAL_MS", default: c.outboxInterval)
        c.sessionTimeout = env.kafkaSessionTimeout(default: c.sessionTimeout)
        c.workDirectory = env.string("TRANSCODE_WORK_DIR", default: c.workDirectory)
        c.maxJobBytes = Int64(env.int("TRANSCODE_MAX_JOB_BYTES", default: Int(c.maxJobBytes), range: 1_048_576...Int(Int64.max)))
        c.catalog = CatalogConfiguration.read(from: &env)
        return c
    }
}

/// transcode-worker: `room.transcode.requests.v1` → `transcode_jobs` (the intake, on the
/// projection runner), the job loop that turns each version into its outputs, the status
/// relay to `room.transcode.status.v1`, the catch-up and retry endpoints, and the room
/// catalog (`/rest/v1/rooms`, `/rest/v1/room_versions`, `/rest/v1/redactions`, the Storage paths
/// of the room files) on its own projection of the room topics.
public struct TranscodeWorkerService: Sendable {
    public static let migrations = ProjectionSchema.migrations + TranscodeSchema.migrations + CatalogSchema.migrations
        + SocialSchema.migrations

    let context: ServiceContext
    let configuration: TranscodeConfiguration
    let pipeline: any TranscodePipeline
    let links: any OutputLinks
    let workerID: String
    /// The store the outputs are in: an erased account's rooms are deleted from it (without
    /// it, only the tables are erased).
    public var objects: (any ObjectStore)?

    public init(context: ServiceContext, configuration: TranscodeConfiguration, pipeline: any TranscodePipeline,
                links: any OutputLinks,
                workerID: String = InstanceName.unique()) {
        self.context = context
        self.configuration = configuration
        self.pipeline = pipeline
        self.links = links
        self.workerID = workerID
    }

    public func parts() -> ServiceParts {
        let jobs = WakeSignal()
        let statuses = WakeSignal()
        var store = TranscodeJobStore(database: context.database, workerID: workerID, lease: configuration.lease)
        let catalog = RoomCatalog(database: context.database, authenticator: context.authenticator, links: links,
                                  configuration: configuration.catalog, linkTTL: configuration.linkTTL)
        store.catalog = catalog.projection(requestsTopic: configuration.requestsTopic, uploadsTopic: configuration.uploadsTopic)
        let intake = ProjectionRunner(
            projection: TranscodeIntake(onNewJobs: { jobs.notify(); statuses.notify() }),
            configuration: ProjectionRunnerConfiguration(
                bootstrapServers: context.configuration.kafkaBrokers, groupID: configuration.groupID,
                topics: [configuration.requestsTopic], maxBatchRecords: 100, maxBatchWait: .milliseconds(20),
                sessionTimeout: configuration.sessionTimeout), context: context)
        var jobLoop = TranscodeJobLoop(store: store, pipeline: pipeline, jobs: jobs, statuses: statuses,
                                    concurrency: configuration.concurrency, pollInterval: configuration.pollInterval,
                                    lease: configuration.lease, maxBackoff: configuration.maxBackoff, metrics: context.metrics,
                                    logger: context.logger)
        jobLoop.objects = objects
        let loop = jobLoop
        let relay = OutboxRelay(name: "transcode-status",
                                outbox: TranscodeStatusOutbox(database: context.database, producer: context.producer,
                                                              topic: configuration.statusTopic),
                                interval: configuration.outboxInterval, grace: .zero, logger: context.logger)
        let interval = configuration.outboxInterval
        let logger = context.logger
        let routes = TranscodeRoutes(store: store, catalog: catalog.store, authenticator: context.authenticator, links: links,
                                     maxAttempts: configuration.maxAttempts, onRetry: { jobs.notify(); statuses.notify() })
        let catalogRunner = ProjectionRunner(
            projection: catalog.projection(requestsTopic: configuration.requestsTopic, uploadsTopic: configuration.uploadsTopic),
            configuration: ProjectionRunnerConfiguration(
                bootstrapServers: context.configuration.kafkaBrokers, groupID: configuration.catalog.groupID,
                topics: configuration.catalogTopics, maxBatchRecords: 500,
                maxBatchWait: .milliseconds(20), sessionTimeout: configuration.sessionTimeout), context: context)
        let socialRunner = ProjectionRunner(
            projection: catalog.socialProjection(interactionsTopic: configuration.interactionsTopic),
            configuration: ProjectionRunnerConfiguration(
                bootstrapServers: context.configuration.kafkaBrokers, groupID: configuration.socialGroupID,
                topics: configuration.socialTopics, maxBatchRecords: 500,
                maxBatchWait: .milliseconds(20), sessionTimeout: configuration.sessionTimeout), context: context)
        var router = routes.router()
        router.merge(catalog.router())
        let erasure = UserErasure(service: TranscodeErasure.service, context: context, step: TranscodeErasure.step(objects: objects)).parts()
        let loops: [any Service] = [
            ClosureService(name: "transcode-intake") { try await intake.run() },
            ClosureService(name: "room-catalog") { try await catalogRunner.run() },
            ClosureService(name: "room-social") { try await socialRunner.run() },
            ClosureService(name: "transcode-jobs") { try await loop.run() },
            ClosureService(name: "transcode-status-relay") {
                // Statuses go out as soon as a stage commits; the interval only bounds how
                // long one left behind by a failed publish waits.
                while !Task.isCancelled {
                    let seen = statuses.current
                    do { try await relay.relayPending() } catch is CancellationError { return } catch {
                        logger.warning("publishing transcode statuses failed; will retry", metadata: ["error": "\(error)"])
                    }
                    do { try await statuses.wait(after: seen, upTo: interval) } catch { return }
                }
            },
        ]
        return ServiceParts(router: router, background: loops + erasure.background,
                            readiness: [ReadinessCheck(name: "transcode-consumers") { !intake.isAssignmentStalled && !catalogRunner.isAssignmentStalled
                                && !socialRunner.isAssignmentStalled }]
                                + erasure.readiness)
    }
}
