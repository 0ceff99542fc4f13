import Auth
import Contracts
import Foundation
import HTTPRouting
import Lifecycle
import ObjectStore
import Projection
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime
import Settings
import UserErasure

/// The write edge: reading-event batches, the materials catalog and CrowdRoom
/// upload completion. Routes:
///
/// - `POST /learning/reading-events/batch` (user token)
/// - `PUT /materials/{id}`, `DELETE /materials/{id}` (service token)
/// - `GET /rooms/quota`, `POST /rooms/uploads` (user token; with an object store)
/// - `POST /rooms/versions` (user token)
/// - `POST`, `GET`, `DELETE /account/deletion` (user token; see `AccountDeletionRoutes`)
/// - CrowdRoom's social writes, `POST`/`DELETE /rest/v1/{comments,likes}`, `POST`/`PATCH
///   /rest/v1/profiles` (user token; see `SocialWriteRoutes`)
/// - `POST /waitlist` (no token; see `WaitlistRoutes`)
/// - the learning app's writes: `PUT /knowledge-bases|paths|lessons/{id}` (service token),
///   `POST /learning/goal|sessions`, `POST /learning/reviews/{id}/complete` (see `LearningWriteRoutes`)
/// - the CrowdRoom app's own calls, `/functions/v1/{quota,upload-init,upload-complete,account-delete}`,
///   and the web editor's `/functions/v1/remix` (see `RemixFunction`)
///   (user token; with an object store; see `EdgeFunctionRoutes`)
///
/// Background: a loop that forgets accepted event ids older than the retention window, and
/// (with an object store) the sweep of abandoned uploads.
public struct IngestService: Sendable {
    /// The runner's offsets table (the room status projection) and ingest's own tables.
    public static let migrations = ProjectionSchema.migrations + IngestSchema.migrations + SocialWriteSchema.migrations
        + WaitlistRoutes.migrations
        + LearningRegistry.migrations

    public let context: ServiceContext
    public let configuration: IngestConfiguration
    let catalog: MaterialCatalog
    let ledger: AcceptedEventLedger
    /// The S3 bucket of room files; without it the upload routes are not served and
    /// upload-complete cannot check objects.
    let objects: (any ObjectStore)?

    public init(context: ServiceContext, configuration: IngestConfiguration, objects: (any ObjectStore)? = nil) {
        self.context = context
        self.configuration = configuration
        self.objects = objects
        self.catalog = MaterialCatalog(database: context.database, ttl: configuration.materialCacheTTL)
        self.ledger = AcceptedEventLedger(database: context.database, retentionDays: configuration.eventIDRetentionDays,
                                          maxClockSkewAhead: configuration.maxClockSkewAhead)
    }

    public func parts() -> ServiceParts {
        describeMetrics()
        let batch = ReadingEventBatchHandler(
            configuration: configuration, validator: ReadingEventValidator(configuration: configuration), catalog: catalog,
            ledger: ledger, limiter: UserRateLimiter(perSecond: configuration.rateLimitPerSecond, burst: configuration.rateLimitBurst),
            producer: context.producer, authenticator: context.authenticator, metrics: context.metrics, logger: context.logger)
        let materials = MaterialRoutes(catalog: catalog, authenticator: context.authenticator, logger: context.logger,
                                       retryAfterSeconds: configuration.unavailableRetryAfterSeconds)
        let validator = RoomVersionValidator(maxUSDZBytes: configuration.maxUSDZBytes)
        let uploads = RoomUploadStore(database: context.database)
        let roomLimiter = UserRateLimiter(perSecond: configuration.rateLimitPerSecond, burst: configuration.rateLimitBurst)
        let rooms = roomVersionHandler(limiter: roomLimiter)

        let deletions = AccountDeletionStore(database: context.database)
        let pending = RevokedSubjects()
        let account = AccountDeletionRoutes(store: deletions, pending: pending, grace: configuration.accountDeletionGracePeriod,
                                            authenticator: context.authenticator, logger: context.logger)
        func guarded(_ route: @escaping HTTPHandler) -> HTTPHandler {
            AccountDeletionRoutes.uploadGuard(pending: pending, authenticator: context.authenticator, route)
        }

        var router = Router()
        router.post("/learning/reading-events/batch", guarded { try await batch.handle($0) })
        router.put("/materials/:id") { try await materials.put($0) }
        router.delete("/materials/:id") { try await materials.delete($0) }
        router.post("/rooms/versions", guarded { try await rooms.handle($0) })
        router.post("/account/deletion") { try await account.request($0) }
        router.get("/account/deletion") { try await account.show($0) }
        router.delete("/account/deletion") { try await account.cancel($0) }
        let social = SocialWriteRoutes(
            database: context.database, producer: context.producer, topic: configuration.roomInteractionsTopic,
            limiter: UserRateLimiter(perSecond: configuration.socialRateLimitPerSecond, burst: configuration.socialRateLimitBurst),
            authenticator: context.authenticator, retryAfterSeconds: configuration.unavailableRetryAfterSeconds, logger: context.logger)
        social.register(on: &router, guarded: guarded)
        LearningWriteRoutes(catalog: catalog, registry: LearningRegistry(database: context.database), producer: context.producer, authenticator: context.authenticator,
                            limiter: UserRateLimiter(perSecond: configuration.rateLimitPerSecond, burst: configuration.rateLimitBurst),
                            topic: configuration.learningSessionsTopic, retryAfterSeconds: configuration.unavailableRetryAfterSeconds,
                            logger: context.logger, clock: { Date() }).register(on: &router, guarded: guarded)
        WaitlistRoutes(database: context.database, perAddress: UserRateLimiter(perSecond: 1.0 / 60, burst: 3),
                       perClient: UserRateLimiter(perSecond: 1, burst: 20), retryAfterSeconds: configuration.unavailableRetryAfterSeconds,
                       logger: context.logger, clock: { Date() }).register(on: &router)
        var background: [any Service] = [purgeLoop()]
        if let objects {
            // Storage's signed upload on the one origin, served here (the write edge).
            let signedUploads = StorageUploadRoutes(
                configuration: configuration, uploads: uploads, objects: objects,
                signer: StorageURLSigner(secret: context.authenticator.codec.secret, purpose: .upload), logger: context.logger)
            signedUploads.register(on: &router)
            ResumableUploadRoutes(configuration: configuration, uploads: uploads, objects: objects, database: context.database,
                                  authenticator: context.authenticator, logger: context.logger).register(on: &router)
            let init_ = RoomUploadHandler(configuration: configuration, validator: validator, uploads: uploads, objects: objects,
                                          limiter: roomLimiter, authenticator: context.authenticator, logger: context.logger,
                                          signedUploads: signedUploads)
            router.get("/rooms/quota") { try await init_.quota($0) }
            router.post("/rooms/uploads", guarded { try await init_.initiate($0) })
            router.get("/rooms/uploads/:id") { try await init_.state($0) }
            let remix = RemixFunction(routes: social, objects: objects)
            router.post("/functions/v1/remix", guarded { try await remix.handle($0) })
            if let completer = roomUploadCompleter() {
                EdgeFunctionRoutes(uploads: init_, store: uploads, completer: completer, versions: rooms, account: account)
                    .register(on: &router, guarded: guarded)
                background.append(sweepLoop(completer, RoomUploadSweeper(uploads: uploads, objects: objects, completer: completer,
                                                                         logger: context.logger)))
            }
            let announcements = OutboxRelay(
                name: "room-uploads",
                outbox: RoomUploadStore.outbox(database: context.database, producer: context.producer,
                                               topic: configuration.roomUploadsTopic),
                interval: configuration.uploadOutboxInterval, grace: .zero, logger: context.logger)
            background.append(ClosureService(name: "ingest-upload-outbox") { try await announcements.run() })
        }
        let statuses = ProjectionRunner(
            projection: RoomStatusProjection(),
            configuration: ProjectionRunnerConfiguration(
                bootstrapServers: context.configuration.kafkaBrokers, groupID: configuration.roomStatusGroupID,
                topics: [configuration.roomStatusTopic]), context: context)
        background.append(ClosureService(name: "ingest-room-status") { try await statuses.run() })
        let deletion = accountDeletionLoops(store: deletions, pending: pending)
        return ServiceParts(router: router, background: background + deletion.background,
                            readiness: [ReadinessCheck(name: "room-status-consumer") { !statuses.isAssignmentStalled }] + deletion.readiness)
    }

    /// Account deletion: the scheduler that publishes due requests, the receipt projection
    /// over the services' confirmations, and ingest's own erasure.
    func accountDeletionLoops(store: AccountDeletionStore, pending: RevokedSubjects) -> (background: [any Service], readiness: [ReadinessCheck]) {
        let relay = OutboxRelay(name: "account-deletions",
                                outbox: AccountDeletionOutbox(database: context.database, producer: context.producer,
                                                              topic: context.configuration.userDeletionsTopic),
                                interval: configuration.accountDeletionSchedulerInterval, grace: .zero, logger: context.logger)
        let scheduler = AccountDeletionScheduler(store: store, relay: relay, pending: pending,
                                                 services: configuration.accountDeletionServices,
                                                 interval: configuration.accountDeletionSchedulerInterval, logger: context.logger)
        let receipts = ProjectionRunner(
            projection: DeletionReceiptProjection(),
            configuration: ProjectionRunnerConfiguration(
                bootstrapServers: context.configuration.kafkaBrokers, groupID: configuration.deletionReceiptsGroupID,
                topics: [context.configuration.userDeletionStatusTopic]), context: context)
        let erasure = UserErasure(service: IngestErasure.service, context: context, step: IngestErasure.step(objects: objects)).parts()
        return (scheduler.loops() + [ClosureService(name: "ingest-deletion-receipts") { try await receipts.run() }] + erasure.background,
                [ReadinessCheck(name: "deletion-receipts-consumer") { !receipts.isAssignmentStalled }] + erasure.readiness)
    }

    /// The S3 store of `S3_*` (read into `reader`), or nil when `S3_ENDPOINT` is not set.
    public static func objectStore(from reader: inout EnvironmentReader) -> (any ObjectStore)? {
        guard reader.optionalString("S3_ENDPOINT") != nil else { return nil }
        return S3ObjectStore(configuration: S3Configuration.read(from: &reader))
    }

    /// upload-complete's handler (the app's route, and the server's completion).
    func roomVersionHandler(limiter: UserRateLimiter) -> RoomVersionHandler {
        RoomVersionHandler(
            configuration: configuration, validator: RoomVersionValidator(maxUSDZBytes: configuration.maxUSDZBytes),
            store: RoomVersionStore(database: context.database), uploads: RoomUploadStore(database: context.database),
            objects: objects, limiter: limiter, producer: context.producer, authenticator: context.authenticator,
            metrics: context.metrics, logger: context.logger)
    }

    /// What completes uploads their apps never confirmed (nil without an object store), as the
    /// service's sweep loop runs it; `quiet` replaces `INGEST_AUTO_COMPLETE_AFTER_SECONDS`.
    public func roomUploadCompleter(quiet: Duration? = nil) -> RoomUploadCompleter? {
        guard let objects else { return nil }
        return RoomUploadCompleter(
            uploads: RoomUploadStore(database: context.database), objects: objects,
            versions: roomVersionHandler(limiter: UserRateLimiter(perSecond: configuration.rateLimitPerSecond,
                                                                  burst: configuration.rateLimitBurst)),
            multipartPartBytes: configuration.multipartPartBytes, quiet: quiet ?? configuration.autoCompleteAfter,
            logger: context.logger)
    }

    /// Every `uploadSweepInterval`, completes the uploads whose objects are all there and went
    /// quiet, then abandons those past their time whose objects are not.
    func sweepLoop(_ completer: RoomUploadCompleter, _ sweeper: RoomUploadSweeper) -> PeriodicTask {
        let logger = context.logger
        return PeriodicTask(name: "ingest-upload-sweep", every: configuration.uploadSweepInterval, failure: "upload sweep failed",
                            logger: logger) {
            // The completion first, on its own: a failure of one never stops the other.
            do { try await completer.completeOnce() } catch {
                logger.warning("upload completion pass failed", metadata: ["error": "\(error)"])
            }
            let swept = try await sweeper.sweepOnce()
            if swept > 0 { logger.info("abandoned uploads swept", metadata: ["ingest.swept": String(swept)]) }
        }
    }

    /// Every hour (and once at start), creates the dedup ledger's coming days and forgets
    /// event ids past the retention window by dropping the days wholly older than it.
    func purgeLoop(every interval: Duration = .seconds(3600)) -> PeriodicTask {
        let ledger = self.ledger
        let logger = context.logger
        return PeriodicTask(name: "ingest-event-id-purge", every: interval, failure: "event id ledger maintenance failed",
                            logger: logger) {
            let dropped = try await ledger.maintainPartitions()
            if dropped > 0 { logger.info("forgot expired event ids", metadata: ["ingest.days_dropped": String(dropped)]) }
        }
    }

    private func describeMetrics() {
        let metrics = context.metrics
        metrics.describe("ingest_events_total", type: "counter", help: "Reading events answered, by result.")
        metrics.describe("ingest_rate_limited_total", type: "counter", help: "Batches refused with 429.")
        metrics.describe("ingest_batch_stage_seconds_total", type: "counter",
                          help: "Wall-clock seconds reading-event batches spent in each stage of the handler.")
        metrics.describe("ingest_kafka_failures_total", type: "counter", help: "Batches answered 503 because Kafka did not acknowledge.")
        metrics.describe("ingest_room_versions_total", type: "counter", help: "New room versions queued for transcoding.")
        // Present from the start, so a rate over them is 0 rather than absent.
        for name in ["ingest_kafka_failures_total", "ingest_rate_limited_total", "ingest_room_versions_total"] { metrics.increment(name, by: 0) }
    }
}
