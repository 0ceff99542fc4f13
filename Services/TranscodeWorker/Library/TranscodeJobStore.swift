import Contracts
import Foundation
import Lifecycle
import Postgres
import ServiceLogging

/// A claimed job: the request it came from and the claim that fences every write about it.
public struct TranscodeJob: Sendable {
    public var request: RoomTranscodeRequest
    public var attempt: Int
    public var transientFailures: Int
    /// The trace of the request record: the job's work is done, and its statuses sent, in it.
    public var trace: TraceContext?
}

/// This worker no longer holds the job's claim (its lease ran out and another worker took
/// it over): whatever it was doing is abandoned, the other worker finishes the job.
struct LostClaim: Error, CustomStringConvertible {
    let versionID: String
    var description: String { "the claim on version \(versionID) was taken over by another worker" }
}

/// `transcode_jobs` and its status outbox. Every status change is written together with
/// its outbox entry in one transaction, fenced by the claim (`claimed_by`), so a worker that
/// lost its job cannot write over the one that took it over.
public struct TranscodeJobStore: Sendable {
    let database: PostgresClient
    let workerID: String
    let lease: Duration
    /// The room catalog, brought to a version's end (`ready`, `failed`) in the transaction that
    /// ends the job (`CatalogProjection.applyJobEnd`), so that whatever the app reads on the
    /// pushed status (the room's detail, the catch-up) already says it: the push follows the
    /// status record, which follows this commit.
    public var catalog: CatalogProjection?

    public init(database: PostgresClient, workerID: String, lease: Duration) {
        self.database = database
        self.workerID = workerID
        self.lease = lease
    }

    var leaseSeconds: Double { lease.timeInterval }

    // MARK: Intake

    /// Inserts the jobs not seen before (a redelivered request changes nothing) with their
    /// `queued` status in the outbox; returns how many were new.
    static func insert(_ requests: [(request: RoomTranscodeRequest, trace: TraceContext?)], in connection: PostgresConnection,
                       at now: Date) async throws -> Int {
        var inserted = 0
        for (request, trace) in requests {
            let json = try PostgresJSON(encoding: request, encoder: ContractCoding.encoder)
            let rows = try await connection.query("""
                INSERT INTO transcode_jobs (version_id, room_id, owner_user_id, visibility, request, traceparent)
                VALUES ($1, $2, $3, $4, $5::jsonb, $6) ON CONFLICT (version_id) DO NOTHING RETURNING version_id
                """, [request.versionId, request.roomId, request.ownerUserId, request.visibility.rawValue, json, trace?.traceparent])
            guard !rows.isEmpty else { continue }
            inserted += 1
            try await enqueueStatus(status(request, .queued, at: now), trace: trace, in: connection)
        }
        return inserted
    }

    // MARK: Claims

    /// Claims the oldest runnable job: queued, or transcoding under an expired lease (its
    /// worker died), and not postponed. `SKIP LOCKED` keeps two workers off the same row.
    public func claim() async throws -> TranscodeJob? {
        let rows = try await database.query("""
            UPDATE transcode_jobs j SET claimed_by = $1, lease_until = now() + make_interval(secs => $2::double precision),
                updated_at = now()
            WHERE j.version_id = (
                SELECT version_id FROM transcode_jobs
                WHERE status IN ('queued', 'transcoding') AND not_before <= now()
                  AND (lease_until IS NULL OR lease_until < now())
                ORDER BY not_before, created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
            RETURNING j.request::text AS request, j.attempts, j.transient_failures, j.traceparent
            """, [workerID, leaseSeconds])
        guard let row = rows.first else { return nil }
        let request = try ContractCoding.decode(RoomTranscodeRequest.self, from: Array(try row.decode(String.self, "request").utf8))
        return TranscodeJob(request: request, attempt: Int(try row.decode(Int32.self, "attempts")),
                            transientFailures: Int(try row.decode(Int32.self, "transient_failures")),
                            trace: try row.decode(String?.self, "traceparent").flatMap(TraceContext.init(traceparent:)))
    }

    /// Extends the lease of a job this worker holds; throws `LostClaim` when it holds it no more.
    public func renew(_ versionID: String) async throws {
        let n = try await database.execute("""
            UPDATE transcode_jobs SET lease_until = now() + make_interval(secs => $3::double precision)
            WHERE version_id = $1 AND claimed_by = $2 AND status IN ('queued', 'transcoding')
            """, [versionID, workerID, leaseSeconds])
        if n == 0 { throw LostClaim(versionID: versionID) }
    }

    /// The job entered a stage (`downloading`, `validating`, …): stored and announced.
    public func enter(_ stage: TranscodeStage, of job: TranscodeJob) async throws {
        try await transition(job, status(job.request, .transcoding, stage: stage.rawValue, at: Date()), sql: """
            UPDATE transcode_jobs SET status = 'transcoding', stage = $3, updated_at = now()
            WHERE version_id = $1 AND claimed_by = $2 AND status IN ('queued', 'transcoding')
            """, [stage.rawValue])
    }

    /// The outputs are in the store: `ready`, with where they are and the grade.
    public func finish(_ job: TranscodeJob, outputs: TranscodeOutputs) async throws {
        var ready = status(job.request, .ready, at: Date())
        ready.manifestKey = outputs.manifestKey
        // One thumbnail everywhere: the WebP the catalog and the app's cards load (seed `002_*` §2.2);
        // the PNG beside it stays in the job's row (`GET /rooms/versions/{id}` lists both).
        ready.thumbnailKey = outputs.thumbnailWebpKey
        ready.glbKeys = outputs.glbKeys
        ready.qualityGrade = outputs.qualityGrade
        try await transition(job, ready, sql: """
            UPDATE transcode_jobs SET status = 'ready', stage = NULL, claimed_by = NULL, lease_until = NULL,
                quality_grade = $3, manifest_key = $4, thumbnail_key = $5, thumbnail_webp_key = $6, glb_keys = $7::text[],
                error_code = NULL, reason = NULL, updated_at = now(), finished_at = now()
            WHERE version_id = $1 AND claimed_by = $2 AND status IN ('queued', 'transcoding')
            """, [outputs.qualityGrade, outputs.manifestKey, outputs.thumbnailKey, outputs.thumbnailWebpKey, outputs.glbKeys])
    }

    /// The package cannot be transcoded: `failed` with a code and a reason a person can act on.
    public func fail(_ job: TranscodeJob, code: ErrorCode, reason: String) async throws {
        var failed = status(job.request, .failed, at: Date())
        failed.code = code
        failed.reason = reason
        try await transition(job, failed, sql: """
            UPDATE transcode_jobs SET status = 'failed', claimed_by = NULL, lease_until = NULL,
                error_code = $3, reason = $4, updated_at = now(), finished_at = now()
            WHERE version_id = $1 AND claimed_by = $2 AND status IN ('queued', 'transcoding')
            """, [code.rawValue, reason])
    }

    /// A transient failure (store or database): the job goes back to the queue after `delay`,
    /// still `transcoding` for everyone watching; it is never failed for such a reason.
    public func postpone(_ job: TranscodeJob, by delay: Duration) async throws {
        let seconds = delay.timeInterval
        _ = try await database.execute("""
            UPDATE transcode_jobs SET claimed_by = NULL, lease_until = NULL, transient_failures = transient_failures + 1,
                not_before = now() + make_interval(secs => $3::double precision), updated_at = now()
            WHERE version_id = $1 AND claimed_by = $2
            """, [job.request.versionId, workerID, seconds])
    }

    private func transition(_ job: TranscodeJob, _ status: RoomTranscodeStatus, sql: String,
                            _ extra: [any PostgresBindable]) async throws {
        try await database.withTransaction { connection in
            let n = try await connection.execute(sql, [job.request.versionId, workerID] + extra)
            guard n > 0 else { throw LostClaim(versionID: job.request.versionId) }
            try await Self.enqueueStatus(status, trace: TraceContext.current ?? job.trace, in: connection)
            try await catalog?.applyJobEnd(request: job.request, status: status, in: connection)
        }
        try? await catalog?.afterCommit(())
    }

    // MARK: Owner actions and reads

    public enum RetryOutcome: Sendable, Equatable {
        case queued(attempt: Int)
        case notFound
        case notFailed(status: String)
        case limitReached(attempts: Int)
    }

    /// The owner's `transcode-retry`: a failed version goes back to the queue, at most
    /// `maxAttempts` attempts in all.
    public func retry(_ versionID: String, ownerUserID: String, maxAttempts: Int) async throws -> RetryOutcome {
        try await database.withTransaction { connection in
            let rows = try await connection.query("""
                SELECT request::text AS request, status, attempts FROM transcode_jobs
                WHERE version_id = $1 AND owner_user_id = $2 FOR UPDATE
                """, [versionID, ownerUserID])
            guard let row = rows.first else { return .notFound }
            let status = try row.decode(String.self, "status")
            let attempts = Int(try row.decode(Int32.self, "attempts"))
            guard status == RoomVersionStatus.failed.rawValue else { return .notFailed(status: status) }
            guard attempts < maxAttempts else { return .limitReached(attempts: attempts) }
            _ = try await connection.execute("""
                UPDATE transcode_jobs SET status = 'queued', stage = NULL, attempts = attempts + 1, transient_failures = 0,
                    not_before = now(), error_code = NULL, reason = NULL, finished_at = NULL, updated_at = now()
                WHERE version_id = $1
                """, [versionID])
            let request = try ContractCoding.decode(RoomTranscodeRequest.self, from: Array(try row.decode(String.self, "request").utf8))
            try await Self.enqueueStatus(Self.status(request, .queued, at: Date()), trace: TraceContext.current, in: connection)
            return .queued(attempt: attempts + 1)
        }
    }

    /// One version as the catch-up query answers it.
    public func version(_ versionID: String) async throws -> TranscodeVersionRow? {
        let rows = try await database.query("""
            SELECT version_id, room_id, owner_user_id, visibility, status, stage, attempts, quality_grade, manifest_key,
                thumbnail_key, thumbnail_webp_key, glb_keys, error_code, reason, created_at, updated_at, finished_at
            FROM transcode_jobs WHERE version_id = $1
            """, [versionID])
        return try rows.first.map(TranscodeVersionRow.init(row:))
    }

    // MARK: Status records

    func status(_ request: RoomTranscodeRequest, _ status: RoomVersionStatus, stage: String? = nil, at now: Date) -> RoomTranscodeStatus {
        Self.status(request, status, stage: stage, at: now)
    }

    static func status(_ request: RoomTranscodeRequest, _ status: RoomVersionStatus, stage: String? = nil,
                       at now: Date) -> RoomTranscodeStatus {
        RoomTranscodeStatus(roomId: request.roomId, versionId: request.versionId, ownerUserId: request.ownerUserId,
                            visibility: request.visibility, status: status, stage: stage, at: now)
    }

    /// The status in the outbox, with the trace its record will carry.
    static func enqueueStatus(_ status: RoomTranscodeStatus, trace: TraceContext?, in connection: PostgresConnection) async throws {
        let value = String(decoding: try ContractCoding.encode(status), as: UTF8.self)
        _ = try await connection.execute("INSERT INTO transcode_status_outbox (room_id, value, traceparent) VALUES ($1, $2, $3)",
                                         [status.roomId, value, trace?.traceparent])
    }
}

/// A row of `transcode_jobs`, as the catch-up query reads it.
public struct TranscodeVersionRow: Sendable {
    public var versionID: String
    public var roomID: String
    public var ownerUserID: String
    public var visibility: RoomVisibility
    public var status: RoomVersionStatus
    public var stage: String?
    public var attempts: Int
    public var qualityGrade: String?
    public var manifestKey: String?
    public var thumbnailKey: String?
    public var thumbnailWebpKey: String?
    public var glbKeys: [String]
    public var errorCode: String?
    public var reason: String?
    public var createdAt: Date
    public var updatedAt: Date
    public var finishedAt: Date?

    init(row: PostgresRow) throws {
        versionID = try row.decode(String.self, "version_id")
        roomID = try row.decode(String.self, "room_id")
        ownerUserID = try row.decode(String.self, "owner_user_id")
        visibility = RoomVisibility(rawValue: try row.decode(String.self, "visibility")) ?? .private
        status = RoomVersionStatus(rawValue: try row.decode(String.self, "status")) ?? .queued
        stage = try row.decode(String?.self, "stage")
        attempts = Int(try row.decode(Int32.self, "attempts"))
        qualityGrade = try row.decode(String?.self, "quality_grade")
        manifestKey = try row.decode(String?.self, "manifest_key")
        thumbnailKey = try row.decode(String?.self, "thumbnail_key")
        thumbnailWebpKey = try row.decode(String?.self, "thumbnail_webp_key")
        glbKeys = try row.decode([String]?.self, "glb_keys") ?? []
        errorCode = try row.decode(String?.self, "error_code")
        reason = try row.decode(String?.self, "reason")
        createdAt = try row.decode(Date.self, "created_at")
        updatedAt = try row.decode(Date.self, "updated_at")
        finishedAt = try row.decode(Date?.self, "finished_at")
    }
}
