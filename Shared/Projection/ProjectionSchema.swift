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
    ]
}
