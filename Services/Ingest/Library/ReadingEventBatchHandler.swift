import Contracts
import Foundation
import HTTPRouting
import Kafka
import Lifecycle
import Postgres
import PrometheusMetrics
import ServiceLogging
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
    let producer: any KafkaRecordSender
    let authenticator: RequestAuthenticator
    let metrics: MetricsRegistry
    let logger: Logger

    func handle(_ request: HTTPRequest) async throws -> HTTPResponse {
        var stages = StageTimer(metrics: metrics)
        let userID = try await authenticator.userID(request)
        guard request.body.count <= configuration.maxBatchBytes else {
            throw HTTPError(.payloadTooLarge, code: ErrorCode.payloadTooLarge.rawValue,
                            message: "a batch may be at most \(configuration.maxBatchBytes) bytes")
        }
        if let retryAfter = limiter.acquire(userID) {
            metrics.increment("ingest_rate_limited_total")
            throw HTTPError(.tooManyRequests, code: ErrorCode.rateLimited.rawValue, message: "too many requests; retry later",
                            headers: ["Retry-After": String(retryAfter)])
        }
        stages.lap("admit")
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
        stages.lap("parse")
        let now = Date()
        var plan = ReadingEventBatchPlan(events: events, validator: validator, now: now)
        stages.lap("validate")
        do {
            let materialIDs = plan.candidateMaterialIDs
            if !materialIDs.isEmpty {
                plan.applyMaterials(try await catalog.lookup(materialIDs), userID: userID, now: now)
            }
            stages.lap("catalog")
            let candidates = plan.candidates
            if let earliest = candidates.lazy.map(\.item.clientTimestamp).min() {
                plan.applyAlreadyAccepted(try await ledger.alreadyAccepted(candidates.map(\.key), earliestClientTimestamp: earliest))
            }
            stages.lap("ledger_lookup")
        } catch {
            logger.error("catalog or ledger unavailable", metadata: ["error": "\(error)"])
            throw unavailable("the event store is unavailable")
        }
        try await produce(plan.candidates, userID: userID, receivedAt: now, stages: &stages)
        plan.acceptCandidates()
        let response = plan.response
        metrics.increment("ingest_events_total", by: Double(response.accepted), labels: ["result": "accepted"])
        metrics.increment("ingest_events_total", by: Double(response.duplicates), labels: ["result": "duplicate"])
        metrics.increment("ingest_events_total", by: Double(response.rejected), labels: ["result": "rejected"])
        if TraceContext.current?.sampled == true {
            logger.info("traced reading events answered", metadata: [
                "ingest.accepted": "\(response.accepted)", "ingest.duplicates": "\(response.duplicates)",
                "ingest.rejected": "\(response.rejected)", "kafka.topic": configuration.readingEventsTopic])
        }
        let body = response.json
        stages.lap("respond")
        return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: body)
    }

    /// Sends the candidates and records the acknowledged ids; throws 503 unless all were acknowledged.
    private func produce(_ candidates: [(index: Int, item: ReadingEventUploadItem, key: String)], userID: String,
                         receivedAt: Date, stages: inout StageTimer) async throws {
        guard !candidates.isEmpty else { return }
        let key = Array(userID.utf8)
        var records: [KafkaProducerRecord] = []
        records.reserveCapacity(candidates.count)
        for candidate in candidates {
            let value = ReadingEventRecord(userId: userID, receivedAt: receivedAt, item: candidate.item).json
            records.append(KafkaProducerRecord(topic: configuration.readingEventsTopic, key: key, value: value))
        }
        stages.lap("encode")
        let results = await producer.send(records)
        stages.lap("produce")
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
        stages.lap("ledger_record")
        if let failure {
            metrics.increment("ingest_kafka_failures_total")
            logger.error("the batch was not stored in Kafka (not acknowledged, or not sent)", metadata: [
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

/// Where a batch's time goes: `lap(stage)` adds the time since the previous lap to the
/// counter `ingest_batch_stage_seconds_total{stage}` (wall-clock, including waits), so the
/// ingest benchmark can break an accepted event's microseconds down by stage.
struct StageTimer {
    let metrics: MetricsRegistry
    private var last = ContinuousClock.now

    init(metrics: MetricsRegistry) { self.metrics = metrics }

    mutating func lap(_ stage: String) {
        let now = ContinuousClock.now
        let elapsed = now - last
        last = now
        metrics.increment("ingest_batch_stage_seconds_total",
                          by: elapsed.timeInterval,
                          labels: ["stage": stage])
    }
}
