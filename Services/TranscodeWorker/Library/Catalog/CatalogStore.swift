import Auth
import Contracts
import Foundation
import HTTPRouting
import Postgres
import ServiceRuntime

/// Who is asking: a user (their own rows and the public ones), the project's anon key (a
/// signed-out reader: the public rows only, as a user who owns nothing) or a service token
/// (everything).
enum CatalogViewer: Sendable, Hashable {
    case user(String)
    case anonymous
    case service

    /// The id the row rules compare owners with: nil for a service token (no rule), "" for
    /// the anon key (no owner has it).
    var userID: String? {
        switch self {
        case .user(let id): id
        case .anonymous: ""
        case .service: nil
        }
    }

    func owns(_ ownerID: String) -> Bool {
        switch self {
        case .user(let id): id == ownerID
        case .anonymous: false
        case .service: true
        }
    }

    /// The caller of a request as Supabase clients send it: `Authorization: Bearer <JWT>`, or
    /// else the `apikey` header or parameter holding a token.
    static func of(_ request: HTTPRequest, authenticator: RequestAuthenticator) async throws(HTTPError) -> CatalogViewer {
        var request = request
        if request.bearerToken == nil, let key = request.headers["apikey"] ?? request.query["apikey"], !key.isEmpty {
            request.headers.replaceOrAdd(name: "Authorization", value: "Bearer \(key)")
        }
        let claims = try await authenticator.claims(request, acceptingAnonymous: true)
        return claims.isService ? .service : claims.isAnonymous ? .anonymous : .user(claims.sub)
    }
}

struct CatalogRoomRow: Sendable, Equatable {
    var roomID: String
    var ownerID: String
    var title: String
    var tags: [String]
    var visibility: String
    var locationCity: String?
    var createdAt: Date
    var updatedAt: Date
    var currentVersionID: String?
    var qualityGrade: String?
    var thumbnailKey: String?
    var manifestKey: String?
    var feedRank: String
    var state: String
    var latestVersionID: String
    var latestStatus: String
    /// From the social read model (`catalog_room_social`).
    var likeCount = 0
    var commentCount = 0
    var remixCount = 0
    var remixedFrom: String?
}

struct CatalogVersionRow: Sendable, Equatable {
    var versionID: String
    var roomID: String
    var ownerID: String
    var status: String
    var stage: String?
    var errorCode: String?
    var reason: String?
    var attempts: Int
    var qualityGrade: String?
    var manifestKey: String?
    var thumbnailKey: String?
    var glbKeys: [String]
    var createdAt: Date
    var updatedAt: Date
    var finishedAt: Date?
}

/// Reads the catalog with the row-level rules Supabase would enforce: a room is seen by its
/// owner, and by everyone once it is public and has a published version; a version is seen
/// by its owner, and by everyone when its room is public and it is neither failed nor uploading.
struct CatalogStore: Sendable {
    let database: PostgresClient
    let tables: CatalogTables

    /// Builds WHERE/ORDER BY of `query` over the rooms table `r`.
    func rooms(_ query: PostgRESTQuery, viewer: CatalogViewer) async throws -> [CatalogRoomRow] {
        var sql = SQLBuilder()
        var conditions: [String] = []
        if let user = viewer.userID {
            let u = sql.bind(user)
            conditions.append("(r.owner_id = \(u) OR (r.visibility = 'public' AND r.current_version_id IS NOT NULL))")
        }
        let weighted = Self.isWeightedFeed(query)
        for filter in query.filters {
            if weighted, filter.column == "created_at", filter.op == .lt || filter.op == .lte {
                conditions.append(feedCursor(filter, sql: &sql))
                continue
            }
            conditions.append(try roomCondition(filter, viewer: viewer, sql: &sql))
        }
        let ranked = PostgRESTQuery.Order(column: "feed_rank", descending: true, nullsFirst: false)
        let orders = weighted || query.order.isEmpty ? [ranked] : query.order
        var orderSQL = orders.map { order in
            let column = order.column == "id" ? "r.room_id" : order.column == "feed_rank" ? "r.feed_rank" : "r.\(order.column)"
            return "\(column) \(Self.direction(order, nullable: order.column == "quality_grade"))"
        }
        if !orders.contains(where: { $0.column == "id" || $0.column == "feed_rank" }) {
            orderSQL.append("r.room_id \(orders.last!.descending ? "DESC" : "ASC")")
        }
        let limit = sql.bind(Int64(query.limit ?? 1_000))
        let offset = sql.bind(Int64(query.offset))
        let text = """
            SELECT room_id, owner_id, title, tags, visibility, location_city, created_at, updated_at, current_version_id, quality_grade,
                   thumbnail_key, manifest_key, feed_rank, state, latest_version_id, latest_status,
                   COALESCE(s.like_count, 0) AS like_count, COALESCE(s.comment_count, 0) AS comment_count,
                   COALESCE(s.remix_count, 0) AS remix_count, s.remixed_from
            FROM \(tables.rooms) r LEFT JOIN catalog_room_social s USING (room_id)
            \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "))
            ORDER BY \(orderSQL.joined(separator: ", "))
            LIMIT \(limit) OFFSET \(offset)
            """
        let rows = try await database.query(text, sql.binds)
        return try rows.map { row in
            CatalogRoomRow(
                roomID: try row.decode(String.self, "room_id"), ownerID: try row.decode(String.self, "owner_id"),
                title: try row.decode(String.self, "title"), tags: try row.decode([String].self, "tags"),
                visibility: try row.decode(String.self, "visibility"), locationCity: try row.decode(String?.self, "location_city"),
                createdAt: try row.decode(Date.self, "created_at"),
                updatedAt: try row.decode(Date.self, "updated_at"), currentVersionID: try row.decode(String?.self, "current_version_id"),
                qualityGrade: try row.decode(String?.self, "quality_grade"), thumbnailKey: try row.decode(String?.self, "thumbnail_key"),
                manifestKey: try row.decode(String?.self, "manifest_key"), feedRank: try row.decode(String.self, "feed_rank"),
                state: try row.decode(String.self, "state"), latestVersionID: try row.decode(String.self, "latest_version_id"),
                latestStatus: try row.decode(String.self, "latest_status"), likeCount: try row.decode(Int.self, "like_count"),
                commentCount: try row.decode(Int.self, "comment_count"), remixCount: try row.decode(Int.self, "remix_count"),
                remixedFrom: try row.decode(String?.self, "remixed_from"))
        }
    }

    /// The app's feed call — public rooms, `order=created_at.desc` and nothing else — is the
    /// grade-weighted feed (seed `002_*` §7.3: the list query weighs a C room × 0.5): it is
    /// answered in `feed_rank` order, recency with a C room placed one half-life older. Any
    /// other order (`created_at.desc,id.desc` for pure recency) is taken as written.
    static func isWeightedFeed(_ query: PostgRESTQuery) -> Bool {
        query.order.count == 1 && query.order[0].column == "created_at" && query.order[0].descending
            && query.filters.contains { $0.column == "visibility" && $0.op == .eq && $0.values == ["public"] }
    }

    /// In the weighted feed, `created_at=lt.{T}` — the next page after the row created at `T` —
    /// continues after that row's place in the weighted order: below the `feed_rank` of the
    /// public room created at `T` (the highest, should several share it: a repeat rather than
    /// a gap), or, when none was, below `T` itself as a rank. New rooms never move the rooms
    /// still to come, so the pages neither skip nor repeat while rooms arrive.
    private func feedCursor(_ filter: PostgRESTQuery.Filter, sql: inout SQLBuilder) -> String {
        let at = sql.bind(filter.values[0])
        let strict = filter.op == .lt
        return """
            r.feed_rank \(strict ? "<" : "<=") COALESCE(
                (SELECT max(x.feed_rank) FROM \(tables.rooms) x WHERE x.created_at = \(at)::timestamptz AND x.visibility = 'public'
                    AND x.current_version_id IS NOT NULL),
                lpad(floor(extract(epoch FROM \(at)::timestamptz) * 1000000)::bigint::text, 17, '0')\(strict ? "" : " || '/'"))
            """
    }

    private func roomCondition(_ filter: PostgRESTQuery.Filter, viewer: CatalogViewer, sql: inout SQLBuilder) throws -> String {
        let column: String
        switch filter.column {
        case "id": column = "r.room_id"
        case "tags":
            return "r.tags @> \(sql.bind(filter.values))::text[]"
        case "title":
            switch filter.op {
            case .ilike, .like:
                let pattern = filter.values[0].replacingOccurrences(of: "*", with: "%")
                return "r.title \(filter.op == .ilike ? "ILIKE" : "LIKE") \(sql.bind(pattern))"
            default: column = "r.title"
            }
        case "created_at":
            return "r.created_at \(Self.comparison(filter.op)) \(sql.bind(filter.values[0]))::timestamptz"
        case "feed_rank":
            return "r.feed_rank \(Self.comparison(filter.op)) \(sql.bind(filter.values[0]))"
        case "state", "latest_status":
            // Owner-only columns: another user's rows never match them.
            let condition = Self.identity(filter, "r.\(filter.column)", sql: &sql)
            guard let user = viewer.userID else { return condition }
            return "(r.owner_id = \(sql.bind(user)) AND \(condition))"
        default: column = "r.\(filter.column)"
        }
        return Self.identity(filter, column, sql: &sql)
    }

    static func identity(_ filter: PostgRESTQuery.Filter, _ column: String, sql: inout SQLBuilder) -> String {
        filter.op == .in ? "\(column) = ANY(\(sql.bind(filter.values))::text[])" : "\(column) = \(sql.bind(filter.values[0]))"
    }

    /// `ASC`/`DESC`, with the nulls placement only for a column that can be null: on a NOT NULL
    /// column it changes nothing but would keep PostgreSQL from reading the order off the
    /// index (`catalog_rooms_feed`, `…_created`: a feed page is an index scan, not a sort of
    /// every public room).
    static func direction(_ order: PostgRESTQuery.Order, nullable: Bool) -> String {
        (order.descending ? "DESC" : "ASC") + (nullable ? " NULLS \(order.nullsFirst ? "FIRST" : "LAST")" : "")
    }

    static func comparison(_ op: PostgRESTQuery.Operator) -> String {
        switch op {
        case .lt: "<"
        case .lte: "<="
        case .gt: ">"
        case .gte: ">="
        default: "="
        }
    }

    /// `room_versions` rows matching `query`.
    func versions(_ query: PostgRESTQuery, viewer: CatalogViewer) async throws -> [CatalogVersionRow] {
        var sql = SQLBuilder()
        var conditions: [String] = []
        if let user = viewer.userID { conditions.append(Self.versionRule(user: sql.bind(user))) }
        for filter in query.filters {
            switch filter.column {
            case "created_at", "updated_at":
                conditions.append("v.\(filter.column) \(Self.comparison(filter.op)) \(sql.bind(filter.values[0]))::timestamptz")
            default:
                conditions.append(Self.identity(filter, filter.column == "id" ? "v.version_id" : "v.\(filter.column)", sql: &sql))
            }
        }
        let orders = query.order.isEmpty ? [PostgRESTQuery.Order(column: "created_at", descending: true, nullsFirst: false)] : query.order
        var orderSQL = orders.map { order in
            "\(order.column == "id" ? "v.version_id" : "v.\(order.column)") \(Self.direction(order, nullable: order.column == "finished_at"))"
        }
        if !orders.contains(where: { $0.column == "id" }) { orderSQL.append("v.version_id \(orders.last!.descending ? "DESC" : "ASC")") }
        let limit = sql.bind(Int64(query.limit ?? 1_000))
        let offset = sql.bind(Int64(query.offset))
        return try await versionRows("""
            \(Self.versionSelect(tables)) \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "))
            ORDER BY \(orderSQL.joined(separator: ", ")) LIMIT \(limit) OFFSET \(offset)
            """, sql.binds)
    }

    /// The versions embedded in rooms: each room's current one, or all of each room's.
    func embedded(_ kind: PostgRESTQuery.Embed.Kind, rooms: [CatalogRoomRow], viewer: CatalogViewer) async throws -> [CatalogVersionRow] {
        var sql = SQLBuilder()
        var conditions: [String] = []
        switch kind {
        case .currentVersion: conditions.append("v.version_id = ANY(\(sql.bind(rooms.compactMap(\.currentVersionID)))::text[])")
        case .versions: conditions.append("v.room_id = ANY(\(sql.bind(rooms.map(\.roomID)))::text[])")
        case .author: return []
        }
        if let user = viewer.userID { conditions.append(Self.versionRule(user: sql.bind(user))) }
        return try await versionRows("""
            \(Self.versionSelect(tables)) WHERE \(conditions.joined(separator: " AND ")) ORDER BY v.created_at DESC, v.version_id DESC
            """, sql.binds)
    }

    static func versionRule(user: String) -> String {
        "(v.owner_id = \(user) OR (r.visibility = 'public' AND v.status NOT IN ('failed', 'uploading')))"
    }

    static func versionSelect(_ tables: CatalogTables) -> String {
        """
        SELECT v.version_id, v.room_id, v.owner_id, v.status, v.stage, v.error_code, v.reason, GREATEST(cardinality(v.queued_ats), v.queued_seen, 1) AS attempts,
               v.quality_grade, v.manifest_key, v.thumbnail_key, COALESCE(v.glb_keys, '{}') AS glb_keys, v.created_at, v.updated_at,
               v.finished_at
        FROM (SELECT * FROM \(tables.versions) WHERE status <> 'abandoned') v LEFT JOIN \(tables.rooms) r ON r.room_id = v.room_id
        """
    }

    private func versionRows(_ text: String, _ binds: [any PostgresBindable]) async throws -> [CatalogVersionRow] {
        try await database.query(text, binds).map { row in
            CatalogVersionRow(
                versionID: try row.decode(String.self, "version_id"), roomID: try row.decode(String.self, "room_id"),
                ownerID: try row.decode(String.self, "owner_id"), status: try row.decode(String.self, "status"),
                stage: try row.decode(String?.self, "stage"), errorCode: try row.decode(String?.self, "error_code"),
                reason: try row.decode(String?.self, "reason"), attempts: try row.decode(Int.self, "attempts"),
                qualityGrade: try row.decode(String?.self, "quality_grade"), manifestKey: try row.decode(String?.self, "manifest_key"),
                thumbnailKey: try row.decode(String?.self, "thumbnail_key"), glbKeys: try row.decode([String].self, "glb_keys"),
                createdAt: try row.decode(Date.self, "created_at"), updatedAt: try row.decode(Date.self, "updated_at"),
                finishedAt: try row.decode(Date?.self, "finished_at"))
        }
    }
}

/// Numbered binds for a statement built piece by piece.
struct SQLBuilder {
    var binds: [any PostgresBindable] = []

    mutating func bind(_ value: any PostgresBindable) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }
}
