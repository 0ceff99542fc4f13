import Postgres

/// The transcode worker's tables (migration versions 600–699):
///
/// - `transcode_jobs`: one row per room version, inserted by the intake projection from
///   `room.transcode.requests.v1`. `status` is `queued`, `transcoding`, `ready` or `failed`;
///   a worker claims a job by writing its id in `claimed_by` with a lease, renews the lease
///   while it works, and a job whose lease ran out is claimable again (its worker died).
///   `attempts` counts the owner's attempts (the first and each retry, at most 3);
///   `transient_failures` counts store or database failures of the current attempt, which
///   push `not_before` back and never fail the job.
/// - `transcode_status_outbox`: every status change, written in the transaction that makes
///   it, published to `room.transcode.status.v1` in id order and then deleted.
public enum TranscodeSchema {
    public static let migrations: [PostgresMigration] = [
        PostgresMigration(version: 600, name: "transcode_jobs_and_status_outbox", sql: """
            CREATE TABLE IF NOT EXISTS transcode_jobs (
                version_id         text        PRIMARY KEY,
                room_id            text        NOT NULL,
                owner_user_id      text        NOT NULL,
                visibility         text        NOT NULL,
                request            jsonb       NOT NULL,
                status             text        NOT NULL DEFAULT 'queued',
                stage              text,
                attempts           integer     NOT NULL DEFAULT 1,
                transient_failures integer     NOT NULL DEFAULT 0,
                not_before         timestamptz NOT NULL DEFAULT now(),
                claimed_by         text,
                lease_until        timestamptz,
                quality_grade      text,
                manifest_key       text,
                thumbnail_key      text,
                thumbnail_webp_key text,
                glb_keys           text[],
                error_code         text,
                reason             text,
                created_at         timestamptz NOT NULL DEFAULT now(),
                updated_at         timestamptz NOT NULL DEFAULT now(),
                finished_at        timestamptz
            );
            CREATE INDEX IF NOT EXISTS transcode_jobs_claimable ON transcode_jobs (not_before)
                WHERE status IN ('queued', 'transcoding');
            CREATE INDEX IF NOT EXISTS transcode_jobs_room ON transcode_jobs (room_id);

            CREATE TABLE IF NOT EXISTS transcode_status_outbox (
                id         bigserial   PRIMARY KEY,
                room_id    text        NOT NULL,
                value      text        NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now()
            );
            """),
        // The W3C trace of a job's request, which its statuses carry on (`traceparent` header).
        PostgresMigration(version: 610, name: "transcode_traceparent", sql: """
            ALTER TABLE transcode_jobs ADD COLUMN IF NOT EXISTS traceparent text;
            ALTER TABLE transcode_status_outbox ADD COLUMN IF NOT EXISTS traceparent text;
            """),
    ]
}
