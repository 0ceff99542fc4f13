import Contracts
import Foundation
import HTTPRouting
import JSON
import Postgres

/// A row of a social table: text and timestamp columns by name (nil = null).
struct SocialRow: Sendable {
    enum Value: Sendable { case text(String?), time(Date?) }
    var values: [String: Value]

    func text(_ column: String) -> String? {
        if case .text(let value)? = values[column] { return value }
        return nil
    }
}

/// How one social table is read: its source, its columns' SQL, and who sees which rows.
struct SocialTable: Sendable {
    var from: String
    /// Answer column → SQL expression.
    var columns: [(name: String, sql: String, time: Bool)]
    /// The row rule for a user (`$u` replaced by the bound user id), or nil for none.
    var rule: @Sendable (String) -> String

    static let roomRule: @Sendable (String) -> String = { u in
        "(r.owner_id = \(u) OR (r.visibility = 'public' AND r.current_version_id IS NOT NULL))"
    }

    static func of(_ resource: CatalogResource) -> SocialTable? {
        switch resource {
        case .comments:
            SocialTable(
                from: "catalog_comments c JOIN catalog_rooms r ON r.room_id = c.room_id WHERE c.deleted_at IS NULL",
                columns: [("id", "c.comment_id", false), ("room_id", "c.room_id", false), ("author_id", "c.author_id", false),
                          ("body", "c.body", false), ("created_at", "c.created_at", true)],
                rule: roomRule)
        case .likes:
            SocialTable(
                from: "catalog_likes l JOIN catalog_rooms r ON r.room_id = l.room_id WHERE true",
                columns: [("room_id", "l.room_id", false), ("user_id", "l.user_id", false), ("created_at", "l.created_at", true)],
                rule: roomRule)
        case .profiles:
            // Anyone signed in reads profiles; the anon key reads them only as comments' authors.
            SocialTable(
                from: "catalog_profiles p WHERE true",
                columns: [("id", "p.user_id", false), ("display_name", "p.display_name", false), ("avatar_path", "p.avatar_path", false),
                          ("created_at", "p.created_at", true), ("updated_at", "p.updated_at", true)],
                rule: { u in "\(u) <> ''" })
        case .notifications:
            SocialTable(
                from: "catalog_notifications n WHERE true",
                columns: [("id", "n.notification_id", false), ("user_id", "n.user_id", false), ("kind", "n.kind", false),
                          ("room_id", "n.room_id", false), ("version_id", "n.version_id", false), ("actor_id", "n.actor_id", false),
                          ("comment_id", "n.comment_id", false), ("excerpt", "n.excerpt", false),
                          ("created_at", "n.created_at", true), ("read_at", "n.read_at", true)],
                rule: { u in "n.user_id = \(u)" })
        default: nil
        }
    }

    func sql(_ column: String) -> String? { columns.first { $0.name == column }?.sql }
}

extension CatalogStore {
    /// The rows of a social table matching `query`, with the table's row rule.
    func social(_ resource: CatalogResource, _ query: PostgRESTQuery, viewer: CatalogViewer) async throws -> [SocialRow] {
        guard let table = SocialTable.of(resource) else { return [] }
        var sql = SQLBuilder()
        var conditions: [String] = []
        if let user = viewer.userID { conditions.append(table.rule(sql.bind(user))) }
        for filter in query.filters {
            guard let column = table.sql(filter.column) else { continue }
            switch filter.op {
            case .is: conditions.append("\(column) IS NULL")
            case .lt, .lte, .gt, .gte:
                conditions.append("\(column) \(Self.comparison(filter.op)) \(sql.bind(filter.values[0]))::timestamptz")
            case .eq where filter.column == "created_at":
                conditions.append("\(column) = \(sql.bind(filter.values[0]))::timestamptz")
            default: conditions.append(Self.identity(filter, column, sql: &sql))
            }
        }
        let orders = query.order.isEmpty ? [PostgRESTQuery.Order(column: "created_at", descending: resource == .notifications, nullsFirst: false)]
            : query.order
        var orderSQL = orders.compactMap { order in table.sql(order.column).map { "\($0) \(Self.direction(order, nullable: false))" } }
        orderSQL.append("\(table.columns[0].sql) \(orders.last!.descending ? "DESC" : "ASC")")
        let limit = sql.bind(Int64(query.limit ?? 1_000))
        let offset = sql.bind(Int64(query.offset))
        let select = table.columns.map { "\($0.sql) AS \($0.name)" }.joined(separator: ", ")
        let text = """
            SELECT \(select) FROM \(table.from) \(conditions.isEmpty ? "" : "AND " + conditions.joined(separator: " AND "))
            ORDER BY \(orderSQL.joined(separator: ", ")) LIMIT \(limit) OFFSET \(offset)
            """
        return try await socialRows(text, sql.binds, table: table)
    }

    /// The profiles of `users` (the authors embedded in comments), whoever asks.
    func profiles(_ users: [String]) async throws -> [String: SocialRow] {
        guard !users.isEmpty, let table = SocialTable.of(.profiles) else { return [:] }
        let select = table.columns.map { "\($0.sql) AS \($0.name)" }.joined(separator: ", ")
        let rows = try await socialRows("SELECT \(select) FROM \(table.from) AND p.user_id = ANY($1::text[])", [users], table: table)
        var byUser: [String: SocialRow] = [:]
        for row in rows { if let id = row.text("id") { byUser[id] = row } }
        return byUser
    }

    /// `read_at` of the notifications `ids` of `user` (nil: unread again); the rows changed.
    func markNotifications(_ ids: [String], user: String?, readAt: Date?) async throws -> [SocialRow] {
        guard let table = SocialTable.of(.notifications) else { return [] }
        let returning = table.columns.map { "\($0.sql) AS \($0.name)" }.joined(separator: ", ")
        var binds: [any PostgresBindable] = [readAt.map(ContractCoding.formatTimestamp), ids]
        if let user { binds.append(user) }
        return try await socialRows("""
            UPDATE catalog_notifications n SET read_at = $1::timestamptz
            WHERE n.notification_id = ANY($2::text[]) \(user == nil ? "" : "AND n.user_id = $3")
            RETURNING \(returning)
            """, binds, table: table)
    }

    private func socialRows(_ text: String, _ binds: [any PostgresBindable], table: SocialTable) async throws -> [SocialRow] {
        try await database.query(text, binds).map { row in
            var values: [String: SocialRow.Value] = [:]
            for column in table.columns {
                values[column.name] = column.time ? .time(try row.decode(Date?.self, column.name))
                    : .text(try row.decode(String?.self, column.name))
            }
            return SocialRow(values: values)
        }
    }
}

extension CatalogRenderer {
    func write(_ row: SocialRow, resource: CatalogResource, columns: [String]?, embeds: [PostgRESTQuery.Embed],
               authors: [String: SocialRow], to w: inout JSONWriter) {
        w.beginObject()
        for column in columns ?? resource.columns { w.dynamicKey(column); write(row.values[column], to: &w) }
        for embed in embeds where embed.kind == .author {
            w.dynamicKey(embed.name)
            if let author = row.text("author_id").flatMap({ authors[$0] }) {
                w.beginObject()
                for column in embed.columns ?? CatalogResource.profiles.columns { w.dynamicKey(column); write(author.values[column], to: &w) }
                w.endObject()
            } else {
                w.null()
            }
        }
        w.endObject()
    }

    private func write(_ value: SocialRow.Value?, to w: inout JSONWriter) {
        switch value {
        case .text(let text?)?: w.string(text)
        case .time(let date?)?: w.timestamp(date)
        default: w.null()
        }
    }
}
