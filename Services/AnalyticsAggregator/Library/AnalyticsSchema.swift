import Postgres

/// The analytics read model's tables (migration versions 400–499).
///
/// `analytics_events` is the projection's own event log: an event changes the aggregates
/// only when its `event_id` is inserted for the first time, in the same transaction that
/// advances the consumer offsets. Every aggregate is a sum, a minimum/maximum, an OR or a
/// set membership, so the final figures do not depend on the order events arrive in.
public enum AnalyticsSchema {
    public static let migrations: [PostgresMigration] = readingMigrations + LearningSchema.migrations

    /// The reading figures' own (what `backbone rebuild analytics` re-creates); the learning read
    /// model's are `LearningSchema.migrations` (`backbone rebuild learning`).
    public static let readingMigrations: [PostgresMigration] = [
        PostgresMigration(version: 400, name: "analytics_read_model", sql: """
            CREATE TABLE IF NOT EXISTS analytics_events (
                event_id            text        PRIMARY KEY,
                user_id             text        NOT NULL,
                client_session_id   text        NOT NULL,
                material_id         text        NOT NULL,
                event_type          text        NOT NULL,
                active_seconds      integer     NOT NULL,
                client_ts           timestamptz NOT NULL,
                tz_offset_minutes   integer     NOT NULL,
                local_day           date        NOT NULL,
                received_at         timestamptz NOT NULL,
                applied_at          timestamptz NOT NULL DEFAULT now()
            );

            -- per user and local day
            CREATE TABLE IF NOT EXISTS analytics_daily (
                user_id         text    NOT NULL,
                day             date    NOT NULL,
                active_seconds  bigint  NOT NULL DEFAULT 0,
                events          integer NOT NULL DEFAULT 0,
                PRIMARY KEY (user_id, day)
            );

            -- materials read on a local day, and whether one was completed that day
            CREATE TABLE IF NOT EXISTS analytics_day_materials (
                user_id     text    NOT NULL,
                day         date    NOT NULL,
                material_id text    NOT NULL,
                completed   boolean NOT NULL DEFAULT false,
                PRIMARY KEY (user_id, day, material_id)
            );

            -- reading sessions with at least one event on a local day
            CREATE TABLE IF NOT EXISTS analytics_day_sessions (
                user_id           text NOT NULL,
                day               date NOT NULL,
                client_session_id text NOT NULL,
                PRIMARY KEY (user_id, day, client_session_id)
            );

            -- materials a user ever completed
            CREATE TABLE IF NOT EXISTS analytics_completions (
                user_id            text        NOT NULL,
                material_id        text        NOT NULL,
                first_completed_at timestamptz NOT NULL,
                PRIMARY KEY (user_id, material_id)
            );

            -- reading sessions: start = first event, end = `closed` (else last event)
            CREATE TABLE IF NOT EXISTS analytics_sessions (
                user_id           text        NOT NULL,
                client_session_id text        NOT NULL,
                material_id       text        NOT NULL,
                started_at        timestamptz NOT NULL,
                last_event_at     timestamptz NOT NULL,
                closed_at         timestamptz,
                active_seconds    bigint      NOT NULL DEFAULT 0,
                completed         boolean     NOT NULL DEFAULT false,
                events            integer     NOT NULL DEFAULT 0,
                PRIMARY KEY (user_id, client_session_id)
            );
            CREATE INDEX IF NOT EXISTS analytics_sessions_history
                ON analytics_sessions (user_id, started_at DESC, client_session_id DESC);

            -- the offset of the user's latest event (by client time): their default "today"
            CREATE TABLE IF NOT EXISTS analytics_users (
                user_id           text        PRIMARY KEY,
                latest_event_at   timestamptz NOT NULL,
                tz_offset_minutes integer     NOT NULL
            );

            -- every per-day figure in one place, for operators and `backbone dump`
            CREATE OR REPLACE VIEW analytics_daily_figures AS
            SELECT d.user_id, d.day, d.active_seconds, d.events,
                   (SELECT count(*) FROM analytics_day_materials m WHERE m.user_id = d.user_id AND m.day = d.day) AS materials_read,
                   (SELECT count(*) FROM analytics_day_materials m
                     WHERE m.user_id = d.user_id AND m.day = d.day AND m.completed) AS materials_completed,
                   (SELECT count(*) FROM analytics_day_sessions s WHERE s.user_id = d.user_id AND s.day = d.day) AS sessions
            FROM analytics_daily d;
            """),
        PostgresMigration(version: 401, name: "analytics_streak_runs", sql: """
            -- runs of consecutive qualifying days (active time ≥ the threshold), kept by the
            -- aggregator for the users whose day crossed it; the summary reads its streaks here
            CREATE TABLE IF NOT EXISTS analytics_streak_runs (
                user_id    text NOT NULL,
                start_day  date NOT NULL,
                end_day    date NOT NULL,
                PRIMARY KEY (user_id, start_day)
            );

            -- the threshold the runs were computed with (one row; none until the aggregator set it)
            CREATE TABLE IF NOT EXISTS analytics_streak_settings (
                singleton          boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                threshold_seconds  integer NOT NULL
            );
            """),
        PostgresMigration(version: 460, name: "analytics_user_summary", sql: UserSummary.migration),
        PostgresMigration(version: 470, name: "analytics_months", sql: ActivityMonths.migration),
    ]
}
