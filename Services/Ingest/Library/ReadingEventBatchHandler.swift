import Contracts
import Foundation
import HTTPTypes
import Kafka
import Logging
import Metrics
import Postgres
import ServiceRuntime

/// `POST /learning/reading-events/batch`.
///
/// Order of work: token → body size → rate limit → JSON → event count → per-event
/// validation and in-batch duplicates → catalog rules → already-accepted ids → produce the
/// remaining events to Kafka and wait for every acknowledgement → remember their ids →
/// 200. If any record is not acknowledged the answer is 503 and no event is reported
/// accepted (the ids that were acknowledged are remembered, so the resend reports them
/// as duplicates).
struct ReadingEventBatchHandler: Sendable {
    let configuration: IngestConfiguration
    let validator: ReadingEventValidator
    let catalog: MaterialCatalog
    let ledger: AcceptedEventLedger
    let limiter: UserRateLimiter
    let producer: KafkaProducer
    let authenticator: RequestAuthenticator
    let metrics: MetricsRegistry
    let logger: Logger

    func handle(_ request: HTTPRequest) async throws -> HTTPResponse {
        let userID = try authenticator.userID(request)
        guard request.body.count <= configuration.maxBatchBytes else {
            throw HTTPError(.payloadTooLarge, code: ErrorCode.payloadTooLarge.rawValue,
                            message: "a batch may be at most \(configuration.maxBatchBytes) bytes")
        }
        if let retryAfter = limiter.acquire(userID) {
            metrics.increment("ingest_rate_limited_total")
            throw HTTPError(.tooManyRequests, code: ErrorCode.rateLimited.rawValue, message: "too many requests; retry later",
                            headers: ["Retry-After": String(retryAfter)])
        }
        let events: [RawReadingEvent]
        do {
            events = try RawReadingEvent.parseBatch(request.body)
        } catch {
            throw HTTPError(.badRequest, code: ErrorCode.invalidJSON.rawValue, message: "the body is not valid JSON: \(error)")
        }
        guard events.count <= configuration.maxBatchEvents else {
            throw HTTPError(.payloadTooLarge, code: ErrorCode.payloadTooLarge.rawValue,
                            message: "a batch may hold at most \(configuration.maxBatchEvents) events")
        }
        let now = Date()
        var plan = ReadingEventBatchPlan(events: events, validator: validator, now: now)
        do {
            let materialIDs = plan.candidateMaterialIDs
            if !materialIDs.isEmpty {
                plan.applyMaterials(try await catalog.lookup(materialIDs), userID: userID, now: now)
            }
            let keys = plan.candidates.map(\.key)
            if !keys.isEmpty { plan.applyAlreadyAccepted(try await ledger.alreadyAccepted(keys)) }
        } catch {
            logger.error("catalog or ledger unavailable", metadata: ["error": "\(error)"])
            throw unavailable("the event store is unavailable")
        }
        try await produce(plan.candidates, userID: userID, receivedAt: now)
        plan.acceptCandidates()
        let response = plan.response
        metrics.increment("ingest_events_total", by: Double(response.accepted), labels: ["result": "accepted"])
        metrics.increment("ingest_events_total", by: Double(response.duplicates), labels: ["result": "duplicate"])
        metrics.increment("ingest_events_total", by: Double(response.rejected), labels: ["result": "rejected"])
        return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: response.json)
    }

    /// Sends the candidates and records the acknowledged ids; throws 503 unless all were acknowledged.
    private func produce(_ candidates: [(index: Int, item: ReadingEventUploadItem, key: String)], userID: String,
                         receivedAt: Date) async throws {
        guard !candidates.isEmpty else { return }
        let key = Array(userID.utf8)
        var records: [KafkaProducerRecord] = []
        records.reserveCapacity(candidates.count)
        for candidate in candidates {
            let value = ReadingEventRecord(userId: userID, receivedAt: receivedAt, item: candidate.item).json
            records.append(KafkaProducerRecord(topic: configuration.readingEventsTopic, key: key, value: value))
        }
        let results = await producer.send(records)
        var acknowledged: [String] = []
        var failure: KafkaError?
        for (candidate, result) in zip(candidates, results) {
            switch result {
            case .success: acknowledged.append(candidate.key)
            case .failure(let error): failure = failure ?? error
            }
        }
        do {
            try await ledger.record(acknowledged, userID: userID)
        } catch {
            // The events are in Kafka; the consumers' own dedup keeps a resend harmless.
            logger.warning("could not remember accepted event ids", metadata: ["error": "\(error)"])
        }
        if let failure {
            metrics.increment("ingest_kafka_failures_total")
            logger.error("Kafka did not acknowledge the batch", metadata: [
                "kafka.topic": configuration.readingEventsTopic, "error": failure.description,
                "ingest.acknowledged": String(acknowledged.count), "ingest.events": String(candidates.count),
            ])
            throw unavailable("events could not be stored; retry later")
        }
    }

    private func unavailable(_ message: String) -> HTTPError {
        HTTPError(.serviceUnavailable, code: ErrorCode.serviceUnavailable.rawValue, message: message,
                  headers: ["Retry-After": String(configuration.unavailableRetryAfterSeconds)])
    }
}
