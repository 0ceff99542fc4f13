import Postgres

/// The read models of CrowdRoom's social layer, in the room catalog (migration versions
/// 640–659), projected by `SocialProjection` from `room.interactions.v1` (and the transcode
/// completions of `room.transcode.status.v1` for the notifications list):
///
/// - `catalog_comments`: every comment; `deleted_at` once removed (a comment delivered again
///   after its removal stays removed).
/// - `catalog_likes`: one row per user and room.
/// - `catalog_profiles`: each user's profile as she last wrote it.
/// - `catalog_room_social`: per room, the likes and comments counted from the two tables above
///   (recounted for every room a batch touches: exact whatever was delivered twice).
/// - `catalog_notifications`: the recipient's list (Tab 2); `read_at` is written by the
///   recipient herself (`PATCH /rest/v1/notifications`).
public enum SocialSchema {
    public static let migrations: [PostgresMigration] = [
        PostgresMigration(version: 640, name: "catalog_social", sql: """
            CREATE TABLE IF NOT EXISTS catalog_comments (
                comment_id    text        PRIMARY KEY,
                room_id       text        NOT NULL,
                room_owner_id text        NOT NULL,
                author_id     text        NOT NULL,
                body          text        NOT NULL,
                created_at    timestamptz NOT NULL,
                deleted_at    timestamptz
            );
            CREATE INDEX IF NOT EXISTS catalog_comments_room ON catalog_comments (room_id, created_at) WHERE deleted_at IS NULL;
            CREATE INDEX IF NOT EXISTS catalog_comments_author ON catalog_comments (author_id);
            CREATE TABLE IF NOT EXISTS catalog_likes (
                room_id    text        NOT NULL,
                user_id    text        NOT NULL,
                created_at timestamptz NOT NULL,
                PRIMARY KEY (room_id, user_id)
            );
            CREATE INDEX IF NOT EXISTS catalog_likes_user ON catalog_likes (user_id);
            CREATE TABLE IF NOT EXISTS catalog_profiles (
                user_id      text        PRIMARY KEY,
                display_name text,
                avatar_path  text,
                created_at   timestamptz NOT NULL,
                updated_at   timestamptz NOT NULL
            );
            CREATE TABLE IF NOT EXISTS catalog_room_social (
                room_id       text    PRIMARY KEY,
                like_count    integer NOT NULL DEFAULT 0,
                comment_count integer NOT NULL DEFAULT 0,
                remix_count   integer NOT NULL DEFAULT 0,
                remixed_from  text
            );
            CREATE TABLE IF NOT EXISTS catalog_notifications (
                notification_id text        PRIMARY KEY,
                user_id         text        NOT NULL,
                kind            text        NOT NULL CHECK (kind IN ('comment', 'like', 'remix', 'transcode_ready', 'transcode_failed')),
                room_id         text,
                version_id      text,
                actor_id        text,
                comment_id      text,
                excerpt         text,
                created_at      timestamptz NOT NULL,
                read_at         timestamptz
            );
            CREATE INDEX IF NOT EXISTS catalog_notifications_user ON catalog_notifications (user_id, created_at DESC);
            CREATE INDEX IF NOT EXISTS catalog_notifications_actor ON catalog_notifications (actor_id);
            CREATE INDEX IF NOT EXISTS catalog_notifications_comment ON catalog_notifications (comment_id) WHERE comment_id IS NOT NULL;
            """),
    ]

    /// What account deletion erases (before the catalog's rooms, which it reads): the user's
    /// notifications and those her actions caused, her comments and likes and what others wrote
    /// on her rooms (the counts of the rooms that keep going down by what was removed), her
    /// profile, and her rooms' counts.
    static let erasure = [
        "DELETE FROM catalog_notifications WHERE user_id = $1 OR actor_id = $1",
        """
        WITH gone_comments AS (
            DELETE FROM catalog_comments WHERE author_id = $1 OR room_owner_id = $1 RETURNING room_id, deleted_at
        ), gone_likes AS (
            DELETE FROM catalog_likes WHERE user_id = $1 OR room_id IN (SELECT room_id FROM catalog_rooms WHERE owner_id = $1)
            RETURNING room_id
        ), gone AS (
            SELECT room_id, count(*) FILTER (WHERE deleted_at IS NULL) AS comments, 0 AS likes FROM gone_comments GROUP BY room_id
            UNION ALL SELECT room_id, 0, count(*) FROM gone_likes GROUP BY room_id
        ), total AS (
            SELECT room_id, sum(comments) AS comments, sum(likes) AS likes FROM gone GROUP BY room_id
        )
        UPDATE catalog_room_social s SET comment_count = s.comment_count - total.comments, like_count = s.like_count - total.likes
        FROM total WHERE s.room_id = total.room_id
        """,
        "DELETE FROM catalog_profiles WHERE user_id = $1",
        "DELETE FROM catalog_room_social WHERE room_id IN (SELECT room_id FROM catalog_rooms WHERE owner_id = $1)",
        // Forks of her rooms keep their copies but no longer name her room; her forks no longer count.
        "UPDATE catalog_room_social SET remixed_from = NULL WHERE remixed_from IN (SELECT room_id FROM catalog_rooms WHERE owner_id = $1)",
        """
        UPDATE catalog_room_social s SET remix_count = (SELECT count(*) FROM catalog_room_social x WHERE x.remixed_from = s.room_id)
        WHERE s.remix_count > 0 AND $1::text IS NOT NULL
        """,
    ]
}
