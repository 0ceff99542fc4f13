import Postgres

/// The room catalog's tables (migration versions 650–699, inside the transcode worker's
/// range), projected from `room.transcode.requests.v1` and `room.transcode.status.v1` only,
/// so they can be rebuilt from the topics at any time:
///
/// - `catalog_versions`: one row per room version — what its request said (owner, title,
///   tags, visibility, city label, redactions, when) and the last status the worker published
///   (status, stage, error, grade, output keys), with the attempts (the instants of its
///   `queued` statuses).
/// - `catalog_rooms`: one row per room, derived from its versions by `CatalogSQL.refreshRooms`:
///   the latest request's title/tags/visibility/city label, the current (latest ready) version
///   with its grade, thumbnail and manifest, the latest version's status (the "my rooms" group)
///   and the feed's ranking key.
public enum CatalogSchema {
    public static let migrations: [PostgresMigration] = [
        PostgresMigration(version: 650, name: "catalog_rooms_and_versions", sql: CatalogTables.live.createSQL),
        // Attempts by the instants of their `queued` statuses, so that a status delivered again
        // is not counted again (tables created by 650 from here on have the column already).
        PostgresMigration(version: 651, name: "catalog_versions_queued_ats", sql: """
            ALTER TABLE \(CatalogTables.live.versions) ADD COLUMN IF NOT EXISTS queued_ats timestamptz[] NOT NULL DEFAULT '{}';
            """),
        // The room's city-level label (seed `002_*` §8.1, P-3) and the version's redactions (the
        // owner's `/rest/v1/redactions`). Versions projected before stay without them until a
        // rebuild (`backbone rebuild catalog`) reads their requests again.
        PostgresMigration(version: 680, name: "catalog_location_city_and_redactions", sql: """
            ALTER TABLE \(CatalogTables.live.versions) ADD COLUMN IF NOT EXISTS location_city text;
            ALTER TABLE \(CatalogTables.live.versions) ADD COLUMN IF NOT EXISTS redactions jsonb;
            ALTER TABLE \(CatalogTables.live.rooms) ADD COLUMN IF NOT EXISTS location_city text;
            """),
    ]
}

/// The names of one copy of the catalog's tables: the live ones, or shadow copies a rebuild
/// projects into before swapping them in.
public struct CatalogTables: Sendable, Equatable {
    public var rooms: String
    public var versions: String

    public static let live = CatalogTables(rooms: "catalog_rooms", versions: "catalog_versions")

    public init(rooms: String, versions: String) {
        self.rooms = rooms
        self.versions = versions
    }

    /// Shadow copies next to the live tables (`catalog_rooms_<suffix>`…).
    public func shadow(_ suffix: String) -> CatalogTables {
        CatalogTables(rooms: "\(rooms)_\(suffix)", versions: "\(versions)_\(suffix)")
    }

    public var createSQL: String {
        """
        CREATE TABLE IF NOT EXISTS \(versions) (
            version_id    text        PRIMARY KEY,
            room_id       text        NOT NULL,
            owner_id      text        NOT NULL,
            -- from the request (NULL until it is seen: a status can arrive first, on its own topic)
            title         text,
            tags          text[],
            visibility    text,
            location_city text,
            -- the request's redactions, a JSON array of Redaction (NULL until a request is seen)
            redactions    jsonb,
            requested_at  timestamptz,
            -- from the last status
            status        text        NOT NULL DEFAULT 'queued',
            stage         text,
            error_code    text,
            reason        text,
            quality_grade text,
            manifest_key  text,
            thumbnail_key text,
            glb_keys      text[],
            -- attempts counted before queued_ats (no longer written; 0 for versions since)
            queued_seen   integer     NOT NULL DEFAULT 0,
            -- the instants of the `queued` statuses: one per attempt
            queued_ats    timestamptz[] NOT NULL DEFAULT '{}',
            status_at     timestamptz,
            finished_at   timestamptz,
            created_at    timestamptz NOT NULL,
            updated_at    timestamptz NOT NULL
        );
        CREATE INDEX IF NOT EXISTS \(versions)_room ON \(versions) (room_id);

        CREATE TABLE IF NOT EXISTS \(rooms) (
            room_id            text        PRIMARY KEY,
            owner_id           text        NOT NULL,
            title              text        NOT NULL DEFAULT '',
            tags               text[]      NOT NULL DEFAULT '{}',
            visibility         text        NOT NULL DEFAULT 'private',
            location_city      text,
            created_at         timestamptz NOT NULL,
            updated_at         timestamptz NOT NULL,
            current_version_id text,
            quality_grade      text,
            thumbnail_key      text,
            manifest_key       text,
            latest_version_id  text        NOT NULL,
            latest_status      text        NOT NULL,
            -- published | in_progress | failed (the latest version's; "my rooms" groups on it)
            state              text        NOT NULL,
            -- recency weighted by grade, unique (ties broken by id): see CatalogSQL.feedRank
            feed_rank          text        COLLATE "C" NOT NULL
        );
        CREATE INDEX IF NOT EXISTS \(rooms)_feed ON \(rooms) (feed_rank DESC) WHERE visibility = 'public';
        CREATE INDEX IF NOT EXISTS \(rooms)_created ON \(rooms) (created_at DESC, room_id DESC) WHERE visibility = 'public';
        CREATE INDEX IF NOT EXISTS \(rooms)_owner ON \(rooms) (owner_id, created_at DESC);
        CREATE INDEX IF NOT EXISTS \(rooms)_tags ON \(rooms) USING gin (tags);
        """
    }
}
