import Postgres

/// Tables the projection runner owns (migration versions 200–299).
public enum ProjectionSchema {
    public static let migrations: [PostgresMigration] = [
        PostgresMigration(version: 200, name: "projection_consumer_offsets", sql: """
            CREATE TABLE IF NOT EXISTS consumer_offsets (
                group_id    text        NOT NULL,
                topic       text        NOT NULL,
                partition   integer     NOT NULL,
                -- next offset to process; -1 = nothing processed yet (start at the earliest)
                next_offset bigint      NOT NULL DEFAULT -1,
                owner       text        NOT NULL,
                -- bumped on every claim: a member whose generation is stale cannot commit
                generation  bigint      NOT NULL DEFAULT 1,
                updated_at  timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (group_id, topic, partition)
            );
            """),
        // The Kafka cluster a position was stored against: a position from another cluster
        // (a replaced cluster, a restarted embedded broker) is not trusted on assignment.
        PostgresMigration(version: 201, name: "projection_consumer_offsets_cluster", sql: """
            ALTER TABLE consumer_offsets ADD COLUMN IF NOT EXISTS cluster_id text;
            """),
        // Dead letters `backbone dlq replay` republished (one row per dead-letter record,
        // by the cluster it lives in), so a second replay skips them.
        PostgresMigration(version: 202, name: "projection_dead_letter_replays", sql: """
            CREATE TABLE IF NOT EXISTS dead_letter_replays (
                cluster_id       text        NOT NULL,
                dlq_topic        text        NOT NULL,
                dlq_partition    integer     NOT NULL,
                dlq_offset       bigint      NOT NULL,
                original_topic   text        NOT NULL,
                original_partition integer   NOT NULL,
                original_offset  bigint      NOT NULL,
                error            text        NOT NULL,
                replayed_at      timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (cluster_id, dlq_topic, dlq_partition, dlq_offset)
            );
            """),
        // Account deletion (`UserErasure`): each service's erased users, by the hex SHA-256
        // of their id (rows of one service are that service's own list), and the
        // confirmations each service still has to publish to `user.deletions.status.v1`.
        PostgresMigration(version: 220, name: "projection_erased_users", sql: """
            CREATE TABLE IF NOT EXISTS erased_users (
                service    text        NOT NULL,
                user_hash  text        NOT NULL,
                request_id text        NOT NULL,
                erased_at  timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (service, user_hash)
            );
            CREATE INDEX IF NOT EXISTS erased_users_since ON erased_users (service, erased_at);
            CREATE TABLE IF NOT EXISTS user_erasure_outbox (
                id         bigserial   PRIMARY KEY,
                service    text        NOT NULL,
                request_id text        NOT NULL,
                value      text        NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now()
            );
            """),
        // When a stored position was not trusted because the partition no longer holds what
        // the model applied (another cluster, or beyond the high watermark: an embedded broker
        // of `backbone dev` started empty, a topic recreated): the model then holds records its
        // topic cannot replay, which `backbone rebuild` must not silently drop.
        PostgresMigration(version: 230, name: "projection_consumer_offsets_history_lost", sql: """
            ALTER TABLE consumer_offsets ADD COLUMN IF NOT EXISTS history_lost_at timestamptz;
            """),
    ]
}
