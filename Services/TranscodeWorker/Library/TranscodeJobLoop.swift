import Contracts
import Foundation
import Lifecycle
import ObjectStore
import Projection
import PrometheusMetrics
import ServiceLogging

/// Runs claimed jobs: `concurrency` slots, each claiming the oldest runnable job, renewing
/// its lease while the pipeline works, and recording the outcome. No database transaction
/// is open while a room is transcoded: each stage, the result and a postponement are short
/// transactions fenced by the claim.
///
/// - A `TranscodeFailure` (the package is bad) fails the job with its code and reason.
/// - Any other error (the store, the database) postpones it with a growing backoff; such a
///   job is never failed.
/// - A lost claim (this worker's lease ran out and another took the job) abandons it.
struct TranscodeJobLoop: Sendable {
    let store: TranscodeJobStore
    let pipeline: any TranscodePipeline
    let jobs: WakeSignal
    let statuses: WakeSignal
    let concurrency: Int
    let pollInterval: Duration
    let lease: Duration
    let maxBackoff: Duration
    let metrics: MetricsRegistry
    let logger: Logger
    /// Where the outputs go: a job whose row vanished while it ran (its owner's account was
    /// erased) has what it wrote deleted.
    var objects: (any ObjectStore)? = nil

    func run() async throws {
        metrics.describe("transcode_jobs_total", type: "counter", help: "Transcode jobs finished, by outcome (ready, failed).")
        metrics.describe("transcode_job_seconds", type: "histogram", help: "Time to transcode one room version that became ready.")
        metrics.describe("transcode_transient_failures_total", type: "counter",
                         help: "Store or database failures that postponed a job (never failing it).")
        // Present from the start, so a rate over them is 0 rather than absent.
        for outcome in ["ready", "failed"] { metrics.increment("transcode_jobs_total", by: 0, labels: ["outcome": outcome]) }
        metrics.increment("transcode_transient_failures_total", by: 0)
        await withTaskGroup(of: Void.self) { group in
            for slot in 0..<max(1, concurrency) {
                group.addTask { await self.slot(slot) }
            }
        }
    }

    private func slot(_ index: Int) async {
        while !Task.isCancelled {
            let seen = jobs.current
            do {
                if let job = try await store.claim() {
                    // The job's work is a span of its request's trace: its log lines name a
                    // sampled one, and its statuses carry it on.
                    await TraceContext.$current.withValue(job.trace?.child()) { await execute(job) }
                    continue
                }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("claiming a transcode job failed; will retry", metadata: ["error": "\(error)"])
            }
            do { try await jobs.wait(after: seen, upTo: pollInterval) } catch { return }
        }
    }

    func execute(_ job: TranscodeJob) async {
        let versionID = job.request.versionId
        var logger = self.logger
        logger[metadataKey: "room.version"] = versionID
        let started = ContinuousClock.now
        let store = self.store
        let statuses = self.statuses
        do {
            let outputs = try await withLeaseRenewal(versionID) {
                try await pipeline.transcode(job.request) { stage in
                    try await store.enter(stage, of: job)
                    statuses.notify()
                }
            }
            try await store.finish(job, outputs: outputs)
            statuses.notify()
            metrics.increment("transcode_jobs_total", labels: ["outcome": "ready"])
            metrics.observe("transcode_job_seconds", (ContinuousClock.now - started).timeInterval)
            logger.info("room version ready", metadata: ["room.grade": "\(outputs.qualityGrade)"])
        } catch let failure as TranscodeFailure {
            do {
                try await store.fail(job, code: failure.code, reason: failure.reason)
                statuses.notify()
                metrics.increment("transcode_jobs_total", labels: ["outcome": "failed"])
                logger.notice("room version failed", metadata: ["error.code": "\(failure.code.rawValue)", "reason": "\(failure.reason)"])
            } catch {
                await postpone(job, after: error, logger: logger)
            }
        } catch let lost as LostClaim {
            logger.warning("transcode job abandoned", metadata: ["error": "\(lost)"])
            await removeOutputsIfErased(job, logger: logger)
        } catch is CancellationError {
            // Shutting down: the lease runs out and the job is claimed again (here or elsewhere).
            logger.notice("transcode job interrupted by shutdown; it will be taken over")
        } catch {
            await postpone(job, after: error, logger: logger)
        }
    }

    /// The job's row is gone (the erasure of its owner deleted it while the job ran): the
    /// objects it wrote meanwhile under `rooms/{roomId}/{versionId}/` go too.
    private func removeOutputsIfErased(_ job: TranscodeJob, logger: Logger) async {
        guard let objects else { return }
        do {
            guard try await store.version(job.request.versionId) == nil else { return }
            let removed = try await objects.deleteAll(under: "rooms/\(job.request.roomId)/\(job.request.versionId)/")
            logger.notice("outputs of an erased account's job deleted", metadata: ["objects.deleted": "\(removed)"])
        } catch {
            logger.warning("could not delete the outputs of an erased account's job", metadata: ["error": "\(error)"])
        }
    }

    private func postpone(_ job: TranscodeJob, after error: any Error, logger: Logger) async {
        let delay = Self.backoff(failures: job.transientFailures, max: maxBackoff)
        metrics.increment("transcode_transient_failures_total")
        logger.warning("transcode job hit a transient failure; postponed", metadata: [
            "error": "\(error)", "retry.in_seconds": "\(delay.timeInterval)"])
        do { try await store.postpone(job, by: delay) } catch {
            logger.warning("could not postpone the job; its lease will run out instead", metadata: ["error": "\(error)"])
        }
    }

    /// 1 s, 2 s, 4 s … up to `max`.
    static func backoff(failures: Int, max: Duration) -> Duration {
        let seconds = 1 << min(failures, 16)
        return min(.seconds(seconds), max)
    }

    /// Runs `body` while renewing the job's lease every third of its length; a renewal that
    /// finds the claim gone cancels `body` and throws `LostClaim`.
    private func withLeaseRenewal<T: Sendable>(_ versionID: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let store = self.store
        let every = lease / 3
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                while true {
                    try await Task.sleep(for: every)
                    do {
                        try await store.renew(versionID)
                    } catch let lost as LostClaim {
                        throw lost
                    } catch is CancellationError {
                        throw CancellationError()
                    } catch {
                        // The database is away: keep working; the next renewal may succeed.
                    }
                }
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let value = result { return value }
            }
            throw CancellationError()
        }
    }
}
