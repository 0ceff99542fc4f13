import Postgres

/// The write side of CrowdRoom's social layer, owned by ingest (migration versions 140–159):
/// what ingest must know to decide a write before it goes to `room.interactions.v1` — which
/// comments exist and who may remove them, who liked what (a second like is a conflict), each
/// user's profile (an upsert merges into it). The readable tables are the room catalog's,
/// projected from the topic; nothing reads these but ingest.
///
/// - `social_comments`: one row per comment; `deleted_at` once removed (its id stays taken).
/// - `social_likes`: one row per user and room.
/// - `social_profiles`: one row per user who wrote a profile.
enum SocialWriteSchema {
    static let migrations: [PostgresMigration] = [
        PostgresMigration(version: 140, name: "ingest_social_write_side", sql: """
            CREATE TABLE IF NOT EXISTS social_comments (
                comment_id    text        PRIMARY KEY,
                room_id       text        NOT NULL,
                room_owner_id text        NOT NULL,
                author_id     text        NOT NULL,
                body          text        NOT NULL,
                created_at    timestamptz NOT NULL,
                deleted_at    timestamptz
            );
            CREATE INDEX IF NOT EXISTS social_comments_author ON social_comments (author_id);
            CREATE INDEX IF NOT EXISTS social_comments_room ON social_comments (room_id);
            CREATE TABLE IF NOT EXISTS social_likes (
                room_id    text        NOT NULL,
                user_id    text        NOT NULL,
                created_at timestamptz NOT NULL,
                PRIMARY KEY (room_id, user_id)
            );
            CREATE INDEX IF NOT EXISTS social_likes_user ON social_likes (user_id);
            CREATE TABLE IF NOT EXISTS social_profiles (
                user_id      text        PRIMARY KEY,
                display_name text,
                avatar_path  text,
                created_at   timestamptz NOT NULL,
                updated_at   timestamptz NOT NULL
            );
            """),
        // A version's quality grade as its `ready` status gave it: a remix carries its source's, so
        // the fork's catalog rows do not depend on when the catalog saw the source ready.
        PostgresMigration(version: 170, name: "ingest_room_versions_quality_grade", sql: """
            ALTER TABLE room_versions ADD COLUMN IF NOT EXISTS quality_grade text;
            """),
    ]

    /// What account deletion erases here: the user's comments, likes and profile, and the
    /// comments others wrote on her rooms (the rooms are gone).
    static let erasure = [
        "DELETE FROM social_comments WHERE author_id = $1 OR room_owner_id = $1",
        "DELETE FROM social_likes WHERE user_id = $1 OR room_id IN (SELECT room_id FROM rooms WHERE owner_user_id = $1)",
        "DELETE FROM social_profiles WHERE user_id = $1",
    ]
}
