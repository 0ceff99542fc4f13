import Postgres
import Projection

/// SQL of the progress read model.
enum ProgressSQL {
    /// The event log (COPY, with a staging fallback for replays); columns in COPY order.
    static let eventLog = EventLog(table: "progress_event_log", stagingTable: "progress_stage", columns: [
        ("event_id", "text"), ("user_id", "text"), ("material_id", "text"), ("client_session_id", "text"),
        ("event_type", "text"), ("client_timestamp", "timestamptz"), ("sequence", "bigint"),
        ("active_seconds_delta", "integer"), ("kafka_partition", "integer"), ("kafka_offset", "bigint"),
    ])

    /// Merges one delta per (user, material) into `reading_progress`. Every column follows
    /// an order-independent rule: sums, LEAST/GREATEST, and "the row of the greater ordering
    /// key wins" for the position and for the latest session. In the same statement each
    /// changed row is put in the notification outbox with a fresh version and its trace
    /// (`$18`, "" = none).
    static let upsert = """
        WITH d AS (
            SELECT u, m, delta, first_ts::timestamptz AS first_ts, last_ts::timestamptz AS last_ts,
                   NULLIF(completed_ts, '')::timestamptz AS completed_ts,
                   NULLIF(pos, '')::jsonb AS pos, NULLIF(pct, '')::float8 AS pct,
                   NULLIF(pos_ts, '')::timestamptz AS pos_ts, pos_seq, NULLIF(pos_id, '') AS pos_id,
                   session, target, NULLIF(kb, '') AS kb, latest_ts::timestamptz AS latest_ts, latest_seq, latest_id,
                   NULLIF(trace, '') AS trace
            FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                        $9::text[], $10::bigint[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[],
                        $16::bigint[], $17::text[], $18::text[])
                 AS t(u, m, delta, first_ts, last_ts, completed_ts, pos, pct, pos_ts, pos_seq, pos_id,
                      session, target, kb, latest_ts, latest_seq, latest_id, trace)
        ), changed AS (
        INSERT INTO reading_progress AS p (
            user_id, material_id, status, last_position, position_percent, progress_percent, total_active_seconds,
            first_read_at, last_read_at, completed_at, last_session_id, reading_target_type, knowledge_base_id,
            position_ts, position_seq, position_event_id, latest_ts, latest_seq, latest_event_id, updated_at)
        SELECT u, m, CASE WHEN completed_ts IS NULL THEN 'in_progress' ELSE 'completed' END,
               pos, pct, CASE WHEN completed_ts IS NULL THEN COALESCE(pct, 0) ELSE 100 END, delta,
               first_ts, last_ts, completed_ts, session, target, kb,
               pos_ts, CASE WHEN pos_ts IS NULL THEN NULL ELSE pos_seq END, pos_id, latest_ts, latest_seq, latest_id, now()
        FROM d
        ON CONFLICT (user_id, material_id) DO UPDATE SET
            total_active_seconds = p.total_active_seconds + EXCLUDED.total_active_seconds,
            first_read_at = LEAST(p.first_read_at, EXCLUDED.first_read_at),
            last_read_at = GREATEST(p.last_read_at, EXCLUDED.last_read_at),
            completed_at = LEAST(p.completed_at, EXCLUDED.completed_at),
            status = CASE WHEN p.completed_at IS NOT NULL OR EXCLUDED.completed_at IS NOT NULL THEN 'completed' ELSE 'in_progress' END,
            \(UpsertSQL.taking(["last_position", "position_ts", "position_seq", "position_event_id"],
                              when: newerPosition, existing: "p"))
            -- A newer position that does not tell its percent (no key this system reads) keeps
            -- the last known one.
            position_percent = CASE WHEN \(newerPosition) THEN COALESCE(EXCLUDED.position_percent, p.position_percent)
                ELSE p.position_percent END,
            progress_percent = CASE
                WHEN p.completed_at IS NOT NULL OR EXCLUDED.completed_at IS NOT NULL THEN 100
                WHEN \(newerPosition) THEN COALESCE(EXCLUDED.position_percent, p.position_percent, 0)
                ELSE COALESCE(p.position_percent, 0) END,
            \(UpsertSQL.taking(["last_session_id", "reading_target_type", "knowledge_base_id", "latest_ts", "latest_seq",
                               "latest_event_id"], when: newerLatest, existing: "p"))
            updated_at = now()
        RETURNING user_id, material_id, status, last_position, position_event_id, progress_percent, total_active_seconds,
                  last_read_at, last_session_id
        ), queued AS (
            INSERT INTO progress_notify_outbox (user_id, material_id, version, traceparent)
            SELECT c.user_id, c.material_id, nextval('progress_notify_version'), d.trace
            FROM changed c JOIN d ON d.u = c.user_id AND d.m = c.material_id
            ON CONFLICT (user_id, material_id) DO UPDATE SET version = EXCLUDED.version, enqueued_at = now(),
                traceparent = EXCLUDED.traceparent
            RETURNING user_id, material_id, version, traceparent
        )
        SELECT changed.*, queued.version, queued.traceparent FROM changed JOIN queued USING (user_id, material_id)
        """

    /// Removes outbox entries whose notification went out, unless a newer change replaced them.
    static let dequeue = """
        DELETE FROM progress_notify_outbox o USING unnest($1::text[], $2::text[], $3::bigint[]) AS t(u, m, v)
        WHERE o.user_id = t.u AND o.material_id = t.m AND o.version = t.v
        """

    /// Outbox entries older than the grace period (their after-commit publish never
    /// completed), with the row's current state and the trace of its last change.
    static let pendingNotifications = """
        SELECT p.user_id, p.material_id, p.status, p.last_position, p.progress_percent, p.total_active_seconds,
               p.last_read_at, p.last_session_id, o.version, o.traceparent
        FROM progress_notify_outbox o JOIN reading_progress p USING (user_id, material_id)
        WHERE o.enqueued_at < now() - make_interval(secs => $1)
        ORDER BY o.version LIMIT $2
        """

    static let newerPosition = """
        (EXCLUDED.position_ts IS NOT NULL AND (p.position_ts IS NULL OR \
        (EXCLUDED.position_ts, EXCLUDED.position_seq, EXCLUDED.position_event_id) > (p.position_ts, p.position_seq, p.position_event_id)))
        """

    static let newerLatest = """
        ((EXCLUDED.latest_ts, EXCLUDED.latest_seq, EXCLUDED.latest_event_id) > (p.latest_ts, p.latest_seq, p.latest_event_id))
        """

    static let progress = """
        SELECT material_id, status, last_position, progress_percent, total_active_seconds, first_read_at, last_read_at,
               completed_at, last_session_id, reading_target_type, knowledge_base_id
        FROM reading_progress WHERE user_id = $1 AND material_id = $2
        """

    static let continueLearning = """
        SELECT material_id, last_position, progress_percent, last_read_at, reading_target_type, knowledge_base_id
        FROM reading_progress WHERE user_id = $1 AND status = 'in_progress'
        ORDER BY last_read_at DESC, material_id LIMIT 1
        """
}
