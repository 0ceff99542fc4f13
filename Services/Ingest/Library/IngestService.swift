import Contracts
import Foundation
import HTTPTypes
import Logging
import Metrics
import ServiceRuntime

/// The write edge: reading-event batches, the materials catalog and CrowdRoom
/// upload completion. Routes:
///
/// - `POST /learning/reading-events/batch` (user token)
/// - `PUT /materials/{id}`, `DELETE /materials/{id}` (service token)
/// - `POST /rooms/versions` (user token)
///
/// Background: a loop that forgets accepted event ids older than the retention window.
public struct IngestService: Sendable {
    public let context: ServiceContext
    public let configuration: IngestConfiguration
    let catalog: MaterialCatalog
    let ledger: AcceptedEventLedger

    public init(context: ServiceContext, configuration: IngestConfiguration) {
        self.context = context
        self.configuration = configuration
        self.catalog = MaterialCatalog(database: context.database, ttl: configuration.materialCacheTTL)
        self.ledger = AcceptedEventLedger(database: context.database, retentionDays: configuration.eventIDRetentionDays)
    }

    public func parts() -> ServiceParts {
        describeMetrics()
        let batch = ReadingEventBatchHandler(
            configuration: configuration, validator: ReadingEventValidator(configuration: configuration), catalog: catalog,
            ledger: ledger, limiter: UserRateLimiter(perSecond: configuration.rateLimitPerSecond, burst: configuration.rateLimitBurst),
            producer: context.producer, authenticator: context.authenticator, metrics: context.metrics, logger: context.logger)
        let materials = MaterialRoutes(catalog: catalog, authenticator: context.authenticator, logger: context.logger,
                                       retryAfterSeconds: configuration.unavailableRetryAfterSeconds)
        let rooms = RoomVersionHandler(
            configuration: configuration, validator: RoomVersionValidator(maxUSDZBytes: configuration.maxUSDZBytes),
            store: RoomVersionStore(database: context.database), producer: context.producer,
            authenticator: context.authenticator, metrics: context.metrics, logger: context.logger)

        var router = Router()
        router.post("/learning/reading-events/batch") { try await batch.handle($0) }
        router.put("/materials/:id") { try await materials.put($0) }
        router.delete("/materials/:id") { try await materials.delete($0) }
        router.post("/rooms/versions") { try await rooms.handle($0) }
        return ServiceParts(router: router, background: [purgeLoop()])
    }

    /// Every hour (and once at start), forgets event ids past the retention window.
    func purgeLoop(every interval: Duration = .seconds(3600)) -> ClosureService {
        let ledger = self.ledger
        let logger = context.logger
        return ClosureService(name: "ingest-event-id-purge") {
            while !Task.isCancelled {
                do {
                    let purged = try await ledger.purgeExpired()
                    if purged > 0 { logger.info("forgot expired event ids", metadata: ["ingest.purged": String(purged)]) }
                } catch {
                    logger.warning("event id purge failed", metadata: ["error": "\(error)"])
                }
                do { try await Task.sleep(for: interval) } catch { return }
            }
        }
    }

    private func describeMetrics() {
        let metrics = context.metrics
        metrics.describe("ingest_events_total", type: "counter", help: "Reading events answered, by result.")
        metrics.describe("ingest_rate_limited_total", type: "counter", help: "Batches refused with 429.")
        metrics.describe("ingest_kafka_failures_total", type: "counter", help: "Batches answered 503 because Kafka did not acknowledge.")
        metrics.describe("ingest_room_versions_total", type: "counter", help: "New room versions queued for transcoding.")
    }
}
