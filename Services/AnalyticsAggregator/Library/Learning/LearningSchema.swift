import Postgres

/// The learning app's read model (migration versions 440–469), owned by the analytics
/// aggregator and written only by `LearningProjection` from `learning.sessions.v1`:
///
/// - the catalog (`learning_knowledge_bases`, `learning_paths`, `learning_lessons`): each row
///   the latest version written, the document as the service token `PUT` it;
/// - each learner's goal (`learning_profiles`), sessions with their analysis
///   (`learning_sessions`, keyed by the app's `sessionId`: the first write wins) and review
///   tasks (`learning_review_tasks`, SM-2 state on each);
/// - `learning_outbox`: the `analysis_ready` pushes for `realtime.broadcasts.v1`, written in the
///   batch's transaction and taken out once the broker acknowledged them.
public enum LearningSchema {
    public static let migrations: [PostgresMigration] = [
        PostgresMigration(version: 440, name: "learning_read_model", sql: """
            CREATE TABLE IF NOT EXISTS learning_knowledge_bases (
                id          text        PRIMARY KEY,
                version     integer     NOT NULL,
                doc         jsonb       NOT NULL,
                updated_at  timestamptz NOT NULL
            );
            CREATE TABLE IF NOT EXISTS learning_paths (
                id                 text        PRIMARY KEY,
                knowledge_base_id  text        NOT NULL,
                version            integer     NOT NULL,
                doc                jsonb       NOT NULL,
                updated_at         timestamptz NOT NULL
            );
            CREATE INDEX IF NOT EXISTS learning_paths_base ON learning_paths (knowledge_base_id, id);
            CREATE TABLE IF NOT EXISTS learning_lessons (
                id                 text        PRIMARY KEY,
                knowledge_base_id  text        NOT NULL,
                version            integer     NOT NULL,
                doc                jsonb       NOT NULL,
                updated_at         timestamptz NOT NULL
            );
            CREATE TABLE IF NOT EXISTS learning_profiles (
                user_id            text        PRIMARY KEY,
                knowledge_base_id  text,
                path_id            text,
                tz_offset_minutes  integer     NOT NULL DEFAULT 0,
                updated_at         timestamptz NOT NULL
            );
            CREATE TABLE IF NOT EXISTS learning_sessions (
                session_id     text        PRIMARY KEY,
                user_id        text        NOT NULL,
                lesson_id      text        NOT NULL,
                question_id    text,
                started_at     timestamptz NOT NULL,
                ended_at       timestamptz NOT NULL,
                user_input     text        NOT NULL,
                analysis       jsonb       NOT NULL,
                mastery_score  integer     NOT NULL,
                analyzer       text        NOT NULL,
                review_at      timestamptz,
                received_at    timestamptz NOT NULL
            );
            CREATE INDEX IF NOT EXISTS learning_sessions_user ON learning_sessions (user_id, ended_at DESC);
            CREATE TABLE IF NOT EXISTS learning_review_tasks (
                id                 text        PRIMARY KEY,
                user_id            text        NOT NULL,
                lesson_id          text        NOT NULL,
                source_session_id  text        NOT NULL,
                review_type        text        NOT NULL,
                scheduled_at       timestamptz NOT NULL,
                scheduled_day      date        NOT NULL,
                completed_at       timestamptz,
                status             text        NOT NULL,
                repetition         integer     NOT NULL,
                interval_days      integer     NOT NULL,
                ease_factor        double precision NOT NULL,
                mastery_score      integer     NOT NULL
            );
            CREATE INDEX IF NOT EXISTS learning_review_tasks_user ON learning_review_tasks (user_id, status, scheduled_day);
            CREATE TABLE IF NOT EXISTS learning_outbox (
                id           bigserial   PRIMARY KEY,
                channel      text        NOT NULL,
                value        text        NOT NULL,
                traceparent  text,
                created_at   timestamptz NOT NULL DEFAULT now()
            );
            """),
        PostgresMigration(version: 441, name: "learning_feedback", sql: """
            -- seed 003 §九 Feedback: kept once per the app's (or ingest's) feedback id
            CREATE TABLE IF NOT EXISTS learning_feedback (
                id           text        PRIMARY KEY,
                user_id      text        NOT NULL,
                text         text        NOT NULL,
                lesson_id    text,
                session_id   text,
                app_version  text,
                rating       integer,
                created_at   timestamptz NOT NULL
            );
            CREATE INDEX IF NOT EXISTS learning_feedback_time ON learning_feedback (created_at DESC);
            """),
    ]
}
