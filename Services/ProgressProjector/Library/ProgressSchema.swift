import Postgres

/// The progress read model's tables (migration versions 300–399).
public enum ProgressSchema {
    public static let migrations: [PostgresMigration] = [
        PostgresMigration(version: 300, name: "progress_event_log_and_reading_progress", sql: """
            CREATE TABLE IF NOT EXISTS progress_event_log (
                event_id             text PRIMARY KEY,
                user_id              text        NOT NULL,
                material_id          text        NOT NULL,
                client_session_id    text        NOT NULL,
                event_type           text        NOT NULL,
                client_timestamp     timestamptz NOT NULL,
                sequence             bigint      NOT NULL,
                active_seconds_delta integer     NOT NULL,
                kafka_partition      integer     NOT NULL,
                kafka_offset         bigint      NOT NULL,
                projected_at         timestamptz NOT NULL DEFAULT now()
            );

            CREATE TABLE IF NOT EXISTS reading_progress (
                user_id              text        NOT NULL,
                material_id          text        NOT NULL,
                status               text        NOT NULL,
                last_position        jsonb,
                position_percent     double precision,
                progress_percent     double precision NOT NULL DEFAULT 0,
                total_active_seconds bigint      NOT NULL DEFAULT 0,
                first_read_at        timestamptz NOT NULL,
                last_read_at         timestamptz NOT NULL,
                completed_at         timestamptz,
                last_session_id      text,
                reading_target_type  text        NOT NULL,
                knowledge_base_id    text,
                -- ordering key (clientTimestamp, sequence, eventId) of the event behind last_position
                position_ts          timestamptz,
                position_seq         bigint,
                position_event_id    text,
                -- ordering key of the latest event (last session, target type, knowledge base)
                latest_ts            timestamptz NOT NULL,
                latest_seq           bigint      NOT NULL,
                latest_event_id      text        NOT NULL,
                updated_at           timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (user_id, material_id)
            );

            CREATE INDEX IF NOT EXISTS reading_progress_continue
                ON reading_progress (user_id, last_read_at DESC) WHERE status = 'in_progress';
            """),
        PostgresMigration(version: 301, name: "progress_notify_outbox", sql: """
            CREATE SEQUENCE IF NOT EXISTS progress_notify_version;
            CREATE TABLE IF NOT EXISTS progress_notify_outbox (
                user_id     text        NOT NULL,
                material_id text        NOT NULL,
                version     bigint      NOT NULL,
                enqueued_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (user_id, material_id)
            );
            """),
        // The trace of the change a row announces, so that the relay's re-send carries it too.
        PostgresMigration(version: 302, name: "progress_notify_outbox_traceparent", sql: """
            ALTER TABLE progress_notify_outbox ADD COLUMN IF NOT EXISTS traceparent text;
            """),
    ]
}
