import Postgres

/// The tables ingest owns (migration versions 100–199).
///
/// - `materials`: the catalog behind the reading-event material rules.
/// - `ingest_accepted_events`: event ids (`uuid`) Kafka acknowledged, kept for the dedup window,
///   partitioned by UTC day of acceptance (`ingest_accepted_events_YYYYMMDD`).
/// - `rooms` / `room_versions`: CrowdRoom rooms and their uploaded versions; the realtime
///   notifier reads `rooms` (owner, visibility) to authorise `room:{id}` joins.
/// - `room_upload_usage`: bytes each user uploaded per UTC calendar month (quota), versions
///   still `uploading` (upload-init done, upload-complete not yet) included.
public enum IngestSchema {
    public static let migrations: [PostgresMigration] = [
        PostgresMigration(version: 100, name: "ingest_materials", sql: """
            CREATE TABLE IF NOT EXISTS materials (
                material_id text PRIMARY KEY,
                reading_target_type text NOT NULL CHECK (reading_target_type IN ('knowledgeSource', 'temporaryFile')),
                knowledge_base_id text,
                owner_user_id text,
                expires_at timestamptz,
                deleted boolean NOT NULL DEFAULT false,
                updated_at timestamptz NOT NULL DEFAULT now(),
                CHECK (reading_target_type <> 'temporaryFile' OR owner_user_id IS NOT NULL)
            );
            """),
        PostgresMigration(version: 101, name: "ingest_accepted_events", sql: """
            CREATE TABLE IF NOT EXISTS ingest_accepted_events (
                event_id text PRIMARY KEY,
                user_id text NOT NULL,
                accepted_at timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX IF NOT EXISTS ingest_accepted_events_accepted_at ON ingest_accepted_events (accepted_at);
            """),
        PostgresMigration(version: 102, name: "ingest_rooms", sql: """
            CREATE TABLE IF NOT EXISTS rooms (
                room_id text PRIMARY KEY,
                owner_user_id text NOT NULL,
                visibility text NOT NULL CHECK (visibility IN ('public', 'private')),
                title text NOT NULL,
                tags text[] NOT NULL DEFAULT '{}',
                created_at timestamptz NOT NULL DEFAULT now(),
                updated_at timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX IF NOT EXISTS rooms_owner ON rooms (owner_user_id);
            CREATE TABLE IF NOT EXISTS room_versions (
                version_id text PRIMARY KEY,
                room_id text NOT NULL REFERENCES rooms (room_id),
                owner_user_id text NOT NULL,
                status text NOT NULL CHECK (status IN ('pending', 'queued', 'transcoding', 'ready', 'failed')),
                usdz_key text NOT NULL,
                usdz_bytes bigint NOT NULL,
                roomplan_json_key text NOT NULL,
                roomplan_json_bytes bigint NOT NULL,
                sha256 text,
                redactions jsonb NOT NULL DEFAULT '[]',
                quota_month date NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                updated_at timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX IF NOT EXISTS room_versions_room ON room_versions (room_id);
            CREATE TABLE IF NOT EXISTS room_upload_usage (
                user_id text NOT NULL,
                month date NOT NULL,
                bytes bigint NOT NULL DEFAULT 0,
                PRIMARY KEY (user_id, month)
            );
            """),
        PostgresMigration(version: 103, name: "ingest_accepted_events_uuid", sql: """
            ALTER TABLE ingest_accepted_events ALTER COLUMN event_id TYPE uuid USING event_id::uuid;
            """),
        PostgresMigration(version: 104, name: "ingest_room_uploads", sql: """
            ALTER TABLE room_versions DROP CONSTRAINT IF EXISTS room_versions_status_check;
            ALTER TABLE room_versions ADD CONSTRAINT room_versions_status_check
                CHECK (status IN ('uploading', 'pending', 'queued', 'transcoding', 'ready', 'failed'));
            ALTER TABLE room_versions ADD COLUMN IF NOT EXISTS usdz_upload_id text,
                ADD COLUMN IF NOT EXISTS upload_expires_at timestamptz;
            CREATE INDEX IF NOT EXISTS room_versions_uploading ON room_versions (upload_expires_at) WHERE status = 'uploading';
            """),
        // The dedup ledger partitioned by UTC day of `accepted_at`: the window expires by
        // dropping whole days (`ingest_accepted_events_maintain`) instead of deleting rows, and
        // without a unique key or an `accepted_at` index an insert maintains one index on
        // one small partition, so ids can be written by COPY. A resend is still found by
        // `event_id` in any partition; an id written twice (two identical batches in flight)
        // is only a second row for the same answer. Existing rows move into the day they
        // were accepted. No default partition: a lookup would probe it for every id; an
        // insert for a day not created yet creates the days and is retried (the ledger).
        PostgresMigration(version: 105, name: "ingest_accepted_events_by_day", sql: """
            ALTER TABLE ingest_accepted_events RENAME TO ingest_accepted_events_unpartitioned;
            ALTER INDEX IF EXISTS ingest_accepted_events_pkey RENAME TO ingest_accepted_events_unpartitioned_pkey;
            ALTER INDEX IF EXISTS ingest_accepted_events_accepted_at RENAME TO ingest_accepted_events_unpartitioned_accepted_at;
            CREATE TABLE ingest_accepted_events (
                event_id uuid NOT NULL,
                user_id text NOT NULL,
                accepted_at timestamptz NOT NULL DEFAULT now()
            ) PARTITION BY RANGE (accepted_at);
            CREATE INDEX ingest_accepted_events_event_id ON ingest_accepted_events (event_id);
            CREATE FUNCTION ingest_accepted_events_add_day(day date) RETURNS void LANGUAGE plpgsql AS $$
            BEGIN
                EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF ingest_accepted_events FOR VALUES FROM (%L) TO (%L)',
                               'ingest_accepted_events_' || to_char(day, 'YYYYMMDD'),
                               to_char(day, 'YYYY-MM-DD') || ' 00:00:00+00', to_char(day + 1, 'YYYY-MM-DD') || ' 00:00:00+00');
            END $$;
            -- Days from today - 1 to today + ahead_days exist; days wholly older than
            -- retention_days are dropped. Returns the number of days dropped.
            CREATE FUNCTION ingest_accepted_events_maintain(retention_days int, ahead_days int) RETURNS int LANGUAGE plpgsql AS $$
            DECLARE
                today date := (now() AT TIME ZONE 'UTC')::date;
                cutoff date := ((now() - make_interval(days => retention_days)) AT TIME ZONE 'UTC')::date;
                part record;
                dropped int := 0;
            BEGIN
                FOR d IN -1..ahead_days LOOP
                    PERFORM ingest_accepted_events_add_day(today + d);
                END LOOP;
                FOR part IN
                    SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                    WHERE i.inhparent = 'ingest_accepted_events'::regclass AND c.relname ~ '^ingest_accepted_events_[0-9]{8}$'
                LOOP
                    -- A day ending on or before the start of the window: every row in it is older.
                    IF to_date(right(part.relname, 8), 'YYYYMMDD') + 1 <= cutoff THEN
                        EXECUTE format('DROP TABLE %I', part.relname);
                        dropped := dropped + 1;
                    END IF;
                END LOOP;
                RETURN dropped;
            END $$;
            SELECT ingest_accepted_events_add_day(day::date) FROM generate_series(
                least((SELECT min(accepted_at) AT TIME ZONE 'UTC' FROM ingest_accepted_events_unpartitioned)::date,
                      (now() AT TIME ZONE 'UTC')::date - 1),
                (now() AT TIME ZONE 'UTC')::date + 2, interval '1 day') AS day;
            INSERT INTO ingest_accepted_events (event_id, user_id, accepted_at)
                SELECT event_id, user_id, accepted_at FROM ingest_accepted_events_unpartitioned;
            DROP TABLE ingest_accepted_events_unpartitioned;
            """),
        // Two ingest replicas creating the same day at once (each replica's hourly maintenance,
        // or a first write after midnight): `CREATE TABLE IF NOT EXISTS` does not see a table
        // another transaction has not committed, so the second failed on the catalog's unique
        // index. The maintenance now takes a transaction-scoped advisory lock first: the second
        // caller waits for the first and finds its days made.
        PostgresMigration(version: 106, name: "ingest_accepted_events_maintain_serialized", sql: """
            ALTER FUNCTION ingest_accepted_events_maintain(int, int) RENAME TO ingest_accepted_events_maintain_days;
            CREATE FUNCTION ingest_accepted_events_maintain(retention_days int, ahead_days int) RETURNS int LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_advisory_xact_lock(hashtext('ingest_accepted_events_maintain'));
                RETURN ingest_accepted_events_maintain_days(retention_days, ahead_days);
            END $$;
            """),
        // The ledger's lookup as one index scan over the sorted ids (`= ANY`) with its plan
        // pinned: left to itself the planner switches to a sequential scan of a partition once
        // a coalesced array is large next to what its (lagging) statistics say the day holds,
        // so the lookup had been one index probe per id (LATERAL … LIMIT 1), 1.6× the work.
        // Sequential scans (and JIT, which their disabled cost would call in) are off inside
        // the function only.
        PostgresMigration(version: 107, name: "ingest_accepted_events_find", sql: """
            CREATE FUNCTION ingest_accepted_events_find(ids uuid[], earliest timestamptz) RETURNS TABLE (event_id text)
            LANGUAGE sql STABLE SET enable_seqscan = off SET jit = off AS $$
                SELECT e.event_id::text FROM ingest_accepted_events e
                WHERE e.event_id = ANY(ids) AND e.accepted_at >= earliest AND e.accepted_at < now() + interval '1 hour'
            $$;
            """),
        // `room.uploads.v1` records (RoomUploadEvent), written in the transaction of the
        // upload-init or the sweep that they announce, published by the relay in id order.
        PostgresMigration(version: 120, name: "ingest_room_upload_outbox", sql: """
            CREATE TABLE IF NOT EXISTS room_upload_outbox (
                id         bigserial   PRIMARY KEY,
                room_id    text        NOT NULL,
                value      text        NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now()
            );
            """),
        // Account deletion: the requests (a user named by the hex SHA-256 of their id; the id
        // itself only until ingest's own erasure), each service's confirmation, and the
        // `user.deletions.v1` records still to be published.
        PostgresMigration(version: 121, name: "ingest_account_deletions", sql: """
            CREATE TABLE IF NOT EXISTS account_deletions (
                request_id   text        PRIMARY KEY,
                user_hash    text        NOT NULL,
                user_id      text,
                status       text        NOT NULL CHECK (status IN ('scheduled', 'purging', 'completed')),
                requested_at timestamptz NOT NULL,
                purge_at     timestamptz NOT NULL,
                published_at timestamptz,
                completed_at timestamptz
            );
            CREATE UNIQUE INDEX IF NOT EXISTS account_deletions_open ON account_deletions (user_hash)
                WHERE status IN ('scheduled', 'purging');
            CREATE INDEX IF NOT EXISTS account_deletions_due ON account_deletions (purge_at) WHERE status = 'scheduled';
            CREATE INDEX IF NOT EXISTS account_deletions_user ON account_deletions (user_hash, requested_at DESC);
            CREATE TABLE IF NOT EXISTS account_deletion_services (
                request_id text NOT NULL REFERENCES account_deletions (request_id),
                service    text NOT NULL,
                erased_at  timestamptz,
                PRIMARY KEY (request_id, service)
            );
            CREATE TABLE IF NOT EXISTS account_deletion_outbox (
                id         bigserial   PRIMARY KEY,
                user_id    text        NOT NULL,
                value      text        NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now()
            );
            """),
        // upload-init's idempotency key (`Idempotency-Key`, or `clientUploadId` in the body): a
        // repeat by the same owner before `idempotency_expires_at` answers the same version; the
        // request it was first given with (`idempotency_request`) tells a reuse for another.
        PostgresMigration(version: 122, name: "ingest_room_upload_idempotency", sql: """
            ALTER TABLE room_versions ADD COLUMN IF NOT EXISTS idempotency_key text,
                ADD COLUMN IF NOT EXISTS idempotency_request text,
                ADD COLUMN IF NOT EXISTS idempotency_expires_at timestamptz;
            CREATE UNIQUE INDEX IF NOT EXISTS room_versions_idempotency ON room_versions (owner_user_id, idempotency_key)
                WHERE idempotency_key IS NOT NULL;
            """),
        // The app's own upload-init (`/functions/v1/upload-init`) may leave `bytes_json` out:
        // `roomplan_json_bytes` then holds what was reserved (the most the URL is for) until
        // completion finds the real size (`roomplan_json_size_open`). `location_city`: the
        // city-level label the owner gave for the room (seed `002_*` §8.1, P-3).
        PostgresMigration(version: 123, name: "ingest_room_upload_open_json_and_city", sql: """
            ALTER TABLE room_versions ADD COLUMN IF NOT EXISTS roomplan_json_size_open boolean NOT NULL DEFAULT false,
                ADD COLUMN IF NOT EXISTS location_city text;
            """),
        // The W3C trace of the upload-init (or sweep) an announcement came from: its
        // `room.uploads.v1` record carries it (`traceparent` header).
        PostgresMigration(version: 124, name: "ingest_room_upload_outbox_trace", sql: """
            ALTER TABLE room_upload_outbox ADD COLUMN IF NOT EXISTS traceparent text;
            """),
        // Storage's resumable uploads (tus) on the origin: where each stands.
        ResumableUploadRoutes.migration,
    ]
}
