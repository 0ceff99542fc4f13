import Contracts
import Foundation
import HTTPTypes
import Logging
import Metrics
import ObjectStore
import Projection
import ServiceRuntime

/// The write edge: reading-event batches, the materials catalog and CrowdRoom
/// upload completion. Routes:
///
/// - `POST /learning/reading-events/batch` (user token)
/// - `PUT /materials/{id}`, `DELETE /materials/{id}` (service token)
/// - `GET /rooms/quota`, `POST /rooms/uploads` (user token; with an object store)
/// - `POST /rooms/versions` (user token)
///
/// Background: a loop that forgets accepted event ids older than the retention window, and
/// (with an object store) the sweep of abandoned uploads.
public struct IngestService: Sendable {
    /// The runner's offsets table (the room status projection) and ingest's own tables.
    public static let migrations = ProjectionSchema.migrations + IngestSchema.migrations

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
        let rooms = RoomVersionHandler(
            configuration: configuration, validator: validator, store: RoomVersionStore(database: context.database),
            uploads: uploads, objects: objects, limiter: roomLimiter, producer: context.producer,
            authenticator: context.authenticator, metrics: context.metrics, logger: context.logger)

        var router = Router()
        router.post("/learning/reading-events/batch") { try await batch.handle($0) }
        router.put("/materials/:id") { try await materials.put($0) }
        router.delete("/materials/:id") { try await materials.delete($0) }
        router.post("/rooms/versions") { try await rooms.handle($0) }
        var background = [purgeLoop()]
        if let objects {
            let init_ = RoomUploadHandler(configuration: configuration, validator: validator, uploads: uploads, objects: objects,
                                          limiter: roomLimiter, authenticator: context.authenticator, logger: context.logger)
            router.get("/rooms/quota") { try await init_.quota($0) }
            router.post("/rooms/uploads") { try await init_.initiate($0) }
            background.append(sweepLoop(RoomUploadSweeper(uploads: uploads, objects: objects, logger: context.logger)))
        }
        let statuses = ProjectionRunner(
            projection: RoomStatusProjection(),
            configuration: ProjectionRunnerConfiguration(
                bootstrapServers: context.configuration.kafkaBrokers, groupID: configuration.roomStatusGroupID,
                topics: [configuration.roomStatusTopic]),
            database: context.database, deadLetters: context.producer, metrics: context.metrics, logger: context.logger)
        background.append(ClosureService(name: "ingest-room-status") { try await statuses.run() })
        return ServiceParts(router: router, background: background)
    }

    /// The S3 store of `S3_*` (read into `reader`), or nil when `S3_ENDPOINT` is not set.
    public static func objectStore(from reader: inout EnvironmentReader) -> (any ObjectStore)? {
        guard reader.optionalString("S3_ENDPOINT") != nil else { return nil }
        return S3ObjectStore(configuration: S3Configuration.read(from: &reader))
    }

    /// Every `uploadSweepInterval`, abandons uploads past their time.
    func sweepLoop(_ sweeper: RoomUploadSweeper) -> ClosureService {
        let interval = configuration.uploadSweepInterval
        let logger = context.logger
        return ClosureService(name: "ingest-upload-sweep") {
            while !Task.isCancelled {
                do {
                    let swept = try await sweeper.sweepOnce()
                    if swept > 0 { logger.info("abandoned uploads swept", metadata: ["ingest.swept": String(swept)]) }
                } catch {
                    logger.warning("upload sweep failed", metadata: ["error": "\(error)"])
                }
                do { try await Task.sleep(for: interval) } catch { return }
            }
        }
    }

    /// Every hour (and once at start), creates the dedup ledger's coming days and forgets
    /// event ids past the retention window by dropping the days wholly older than it.
    func purgeLoop(every interval: Duration = .seconds(3600)) -> ClosureService {
        let ledger = self.ledger
        let logger = context.logger
        return ClosureService(name: "ingest-event-id-purge") {
            while !Task.isCancelled {
                do {
                    let dropped = try await ledger.maintainPartitions()
                    if dropped > 0 { logger.info("forgot expired event ids", metadata: ["ingest.days_dropped": String(dropped)]) }
                } catch {
                    logger.warning("event id ledger maintenance failed", metadata: ["error": "\(error)"])
                }
                do { try await Task.sleep(for: interval) } catch { return }
            }
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
    }
}
