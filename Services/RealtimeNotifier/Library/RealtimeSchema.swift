import Postgres

/// The notifier's tables (migration versions 500–599):
///
/// - `realtime_channels`: per channel, the last sequence handed out and how far the history
///   was trimmed (sequence and creation time of the newest trimmed event), so a replay can
///   tell exactly whether it still reaches back.
/// - `realtime_history`: the bounded per-channel history; `published` is the outbox flag of
///   the re-publish to `realtime.sequenced.v1`.
/// - `realtime_rooms`: owner and visibility of rooms, from `room.transcode.status.v1`.
public enum RealtimeSchema {
    public static let migrations: [PostgresMigration] = [
        PostgresMigration(version: 500, name: "realtime_channels_history_rooms", sql: """
            CREATE TABLE IF NOT EXISTS realtime_channels (
                channel     text PRIMARY KEY,
                last_seq    bigint      NOT NULL DEFAULT 0,
                trimmed_seq bigint      NOT NULL DEFAULT 0,
                trimmed_at  timestamptz,
                updated_at  timestamptz NOT NULL DEFAULT now()
            );

            CREATE TABLE IF NOT EXISTS realtime_history (
                channel          text        NOT NULL,
                seq              bigint      NOT NULL,
                event            text        NOT NULL,
                payload          jsonb       NOT NULL,
                created_at       timestamptz NOT NULL DEFAULT now(),
                published        boolean     NOT NULL DEFAULT false,
                source_topic     text        NOT NULL,
                source_partition integer     NOT NULL,
                source_offset    bigint      NOT NULL,
                PRIMARY KEY (channel, seq)
            );

            CREATE INDEX IF NOT EXISTS realtime_history_unpublished
                ON realtime_history (created_at) WHERE NOT published;
            CREATE INDEX IF NOT EXISTS realtime_history_created
                ON realtime_history (created_at);

            CREATE TABLE IF NOT EXISTS realtime_rooms (
                room_id       text PRIMARY KEY,
                owner_user_id text        NOT NULL,
                visibility    text        CHECK (visibility IN ('public', 'private')),
                updated_at    timestamptz NOT NULL DEFAULT now()
            );
            """),
    ]
}
