import Contracts
import Foundation
import HTTPRouting

/// The PostgREST subset the catalog answers, parsed from a request's query string:
/// `column=op.value` filters (`eq`, `in`, and on the columns that need them `cs` for tags,
/// `ilike`/`like` for titles, `lt`/`lte`/`gt`/`gte` for the ordering keys a cursor pages on),
/// `select` with embedded versions, `order` (`asc`/`desc`, `nullsfirst`/`nullslast`),
/// `limit` and `offset`. Anything else is a 400 whose code names the unsupported part.
struct PostgRESTQuery: Sendable, Equatable {
    enum Operator: String, Sendable, CaseIterable {
        case eq, `in`, cs, ilike, like, lt, lte, gt, gte
        /// `is.null` / `is.not_null`… only `is.null` and the notifications' `read_at`.
        case `is`
    }

    struct Filter: Sendable, Equatable {
        var column: String
        var op: Operator
        /// One value, or the list of `in.(…)` / `cs.{…}`.
        var values: [String]
    }

    struct Order: Sendable, Equatable {
        var column: String
        var descending: Bool
        var nullsFirst: Bool
    }

    /// An embedded resource: `current_version(*)`, `current_version:room_versions(id,status)`,
    /// `room_versions(*)` (every version of the room the caller may see).
    struct Embed: Sendable, Hashable {
        enum Kind: Sendable, Hashable {
            case currentVersion, versions
            /// A comment's author: `author:profiles(display_name,avatar_path)`.
            case author
        }
        var kind: Kind
        var name: String
        /// nil = every column.
        var columns: [String]?
    }

    var filters: [Filter] = []
    /// nil = every column.
    var columns: [String]?
    var embeds: [Embed] = []
    var order: [Order] = []
    var limit: Int?
    var offset: Int = 0

    /// Parameters that are not filters (`apikey` is Supabase's client key, read as a token).
    static let reserved: Set<String> = ["select", "order", "limit", "offset", "apikey"]

    static func parse(_ query: [String: String], resource: CatalogResource, maxLimit: Int) throws(HTTPError) -> PostgRESTQuery {
        var result = PostgRESTQuery()
        for name in ["or", "and", "not", "on_conflict", "columns"] where query[name] != nil {
            throw unsupported(.unsupportedParameter, "the \(name) parameter is not supported")
        }
        if let select = query["select"] { try result.parseSelect(select, resource: resource) }
        if let order = query["order"] { try result.parseOrder(order, resource: resource) }
        if let text = query["limit"] {
            guard let limit = Int(text), limit >= 0 else { throw invalid("limit must be a non-negative integer") }
            result.limit = min(limit, maxLimit)
        }
        if let text = query["offset"] {
            guard let offset = Int(text), offset >= 0, offset <= 100_000 else { throw invalid("offset must be an integer in 0…100000") }
            result.offset = offset
        }
        for (name, value) in query.sorted(by: { $0.key < $1.key }) where !reserved.contains(name) {
            result.filters.append(try parseFilter(column: name, value, resource: resource))
        }
        return result
    }

    static func parseFilter(column: String, _ text: String, resource: CatalogResource) throws(HTTPError) -> Filter {
        guard let column = resource.column(column) else {
            throw unsupported(.unsupportedColumn, "\(resource.name) has no filterable column \(column)")
        }
        guard let dot = text.firstIndex(of: ".") else { throw invalid("filter \(column.name) needs operator.value (e.g. eq.x)") }
        let name = String(text[..<dot])
        let rest = String(text[text.index(after: dot)...])
        guard let op = Operator(rawValue: name) else {
            throw unsupported(.unsupportedOperator, "the operator \(name) is not supported (supported: eq, in, and on some columns cs, ilike, like, lt, lte, gt, gte)")
        }
        guard column.operators.contains(op) else {
            let allowed = Operator.allCases.filter { column.operators.contains($0) }.map(\.rawValue).joined(separator: ", ")
            throw unsupported(.unsupportedOperator, "\(op.rawValue) is not supported on \(column.name) (supported: \(allowed))")
        }
        switch op {
        case .in:
            guard rest.hasPrefix("("), rest.hasSuffix(")") else { throw invalid("in needs a list: in.(a,b)") }
            let values = try list(String(rest.dropFirst().dropLast()))
            guard values.count <= 1_000 else { throw invalid("in takes at most 1000 values") }
            return Filter(column: column.name, op: op, values: values)
        case .is:
            guard rest == "null" else { throw invalid("is takes null only: is.null") }
            return Filter(column: column.name, op: op, values: [rest])
        case .cs:
            guard rest.hasPrefix("{"), rest.hasSuffix("}") else { throw invalid("cs needs a set: cs.{a,b}") }
            return Filter(column: column.name, op: op, values: try list(String(rest.dropFirst().dropLast())))
        default:
            return Filter(column: column.name, op: op, values: [rest])
        }
    }

    /// Splits `a,"b,c",d` (PostgREST quotes values holding reserved characters).
    static func list(_ text: String) throws(HTTPError) -> [String] {
        var values: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for character in text {
            if escaped { current.append(character); escaped = false; continue }
            switch character {
            case "\\" where quoted: escaped = true
            case "\"": quoted.toggle()
            case "," where !quoted:
                values.append(current)
                current = ""
            default: current.append(character)
            }
        }
        guard !quoted else { throw invalid("unterminated quote in a list") }
        if !current.isEmpty || !values.isEmpty { values.append(current) }
        return values
    }

    mutating func parseSelect(_ text: String, resource: CatalogResource) throws(HTTPError) {
        var columns: [String] = []
        var all = false
        for item in try Self.splitTopLevel(text) {
            let item = item.trimmingCharacters(in: .whitespaces)
            if item == "*" { all = true; continue }
            if let open = item.firstIndex(of: "(") {
                guard item.hasSuffix(")") else { throw Self.unsupported(.unsupportedSelect, "malformed embed \(item)") }
                let head = String(item[..<open])
                let inner = String(item[item.index(after: open)..<item.index(before: item.endIndex)])
                embeds.append(try Self.parseEmbed(head: head, inner: inner, resource: resource))
                continue
            }
            guard !item.contains(":"), !item.contains("->"), !item.contains("::") else {
                throw Self.unsupported(.unsupportedSelect, "renaming, casting and JSON paths in select are not supported (\(item))")
            }
            guard resource.columns.contains(item) else {
                throw Self.unsupported(.unsupportedColumn, "\(resource.name) has no column \(item)")
            }
            columns.append(item)
        }
        self.columns = all || columns.isEmpty ? nil : columns
    }

    static func parseEmbed(head: String, inner: String, resource: CatalogResource) throws(HTTPError) -> Embed {
        let parts = head.split(separator: ":", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard resource == .rooms || resource == .comments, parts.count <= 2 else {
            throw unsupported(.unsupportedSelect, "\(resource.name) embeds nothing like \(head)")
        }
        let alias = parts[0]
        let target = parts.count == 2 ? parts[1] : parts[0]
        if resource == .comments {
            return try parseAuthorEmbed(alias: alias, target: target, inner: inner)
        }
        let kind: Embed.Kind
        if target == "current_version" || target == "room_versions!current_version_id"
            || (target == "room_versions" && alias == "current_version") {
            kind = .currentVersion
        } else if target == "room_versions" || target == "versions" {
            kind = .versions
        } else {
            throw unsupported(.unsupportedSelect, "rooms can embed current_version(…) or room_versions(…), not \(head)")
        }
        return Embed(kind: kind, name: alias, columns: try embedColumns(inner, of: .roomVersions))
    }

    /// A comment's author profile: `author:profiles(…)`, `profiles(…)`, `profiles!author_id(…)`.
    static func parseAuthorEmbed(alias: String, target: String, inner: String) throws(HTTPError) -> Embed {
        guard ["profiles", "profiles!author_id", "profiles!comments_author_id_fkey"].contains(target) else {
            throw unsupported(.unsupportedSelect, "comments can embed their author, profiles(…), not \(target)")
        }
        return Embed(kind: .author, name: alias, columns: try embedColumns(inner, of: .profiles))
    }

    /// The columns an embed names of `resource` (`*` or none named: nil, every column).
    static func embedColumns(_ inner: String, of resource: CatalogResource) throws(HTTPError) -> [String]? {
        var columns: [String] = []
        var all = false
        for column in inner.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if column == "*" { all = true; continue }
            guard resource.columns.contains(column) else {
                throw unsupported(.unsupportedColumn, "\(resource.name) has no column \(column)")
            }
            columns.append(column)
        }
        return all || columns.isEmpty ? nil : columns
    }

    mutating func parseOrder(_ text: String, resource: CatalogResource) throws(HTTPError) {
        for item in text.split(separator: ",") {
            let parts = item.split(separator: ".").map(String.init)
            guard let name = parts.first, resource.orderable.contains(name) else {
                throw Self.unsupported(.unsupportedOrder, "\(resource.name) cannot be ordered by \(parts.first ?? "")"
                                       + " (orderable: \(resource.orderable.sorted().joined(separator: ", ")))")
            }
            var order = Order(column: name, descending: false, nullsFirst: false)
            var nullsGiven = false
            for modifier in parts.dropFirst() {
                switch modifier {
                case "asc": order.descending = false
                case "desc": order.descending = true
                case "nullsfirst": order.nullsFirst = true; nullsGiven = true
                case "nullslast": order.nullsFirst = false; nullsGiven = true
                default: throw Self.unsupported(.unsupportedOrder, "order modifier \(modifier) is not supported (asc, desc, nullsfirst, nullslast)")
                }
            }
            // PostgreSQL's default: NULLS FIRST for DESC, NULLS LAST for ASC.
            if !nullsGiven { order.nullsFirst = order.descending }
            self.order.append(order)
        }
    }

    /// Splits on commas outside parentheses.
    static func splitTopLevel(_ text: String) throws(HTTPError) -> [String] {
        var items: [String] = []
        var depth = 0
        var current = ""
        for character in text {
            switch character {
            case "(": depth += 1; current.append(character)
            case ")":
                depth -= 1
                guard depth >= 0 else { throw unsupported(.unsupportedSelect, "unbalanced parentheses in select") }
                current.append(character)
            case "," where depth == 0:
                items.append(current)
                current = ""
            default: current.append(character)
            }
        }
        guard depth == 0 else { throw unsupported(.unsupportedSelect, "unbalanced parentheses in select") }
        if !current.isEmpty { items.append(current) }
        return items
    }

    static func unsupported(_ code: ErrorCode, _ message: String) -> HTTPError {
        HTTPError(.badRequest, code: code.rawValue, message: message)
    }

    static func invalid(_ message: String) -> HTTPError {
        HTTPError(.badRequest, code: ErrorCode.invalidQuery.rawValue, message: message)
    }
}

/// The tables the catalog answers, with their columns as the seed's app reads them.
enum CatalogResource: Sendable, Equatable {
    case rooms, roomVersions
    /// The owner's redactions (seed `002_*` §4, P-2: the PrivacyDetail page).
    case redactions
    /// CrowdRoom's social layer (seed `002_*` §9.1): see `SocialProjection`.
    case comments, likes, profiles, notifications

    var name: String {
        switch self {
        case .rooms: "rooms"
        case .roomVersions: "room_versions"
        case .redactions: "redactions"
        case .comments: "comments"
        case .likes: "likes"
        case .profiles: "profiles"
        case .notifications: "notifications"
        }
    }

    struct Column: Sendable {
        var name: String
        var operators: Set<PostgRESTQuery.Operator>
    }

    /// Every column of an answer row, in the order they are written.
    var columns: [String] {
        switch self {
        case .rooms:
            ["id", "owner_id", "title", "tags", "visibility", "location_city", "created_at", "updated_at", "current_version_id", "quality_grade",
             "thumbnail_path", "thumbnail_url", "manifest_path", "manifest_url", "feed_rank", "state", "latest_version_id",
             "latest_status", "like_count", "comment_count", "remix_count", "remixed_from"]
        case .roomVersions:
            ["id", "room_id", "owner_id", "status", "stage", "error", "error_reason", "attempts", "quality_grade",
             "manifest_path", "manifest_url", "thumbnail_path", "thumbnail_url", "glb_paths", "glb_urls", "urls_expire_at",
             "created_at", "updated_at", "finished_at"]
        case .redactions:
            ["id", "version_id", "texture_ref", "kind", "region", "method", "created_at"]
        case .comments: ["id", "room_id", "author_id", "body", "created_at"]
        case .likes: ["room_id", "user_id", "created_at"]
        case .profiles: ["id", "display_name", "avatar_path", "created_at", "updated_at"]
        case .notifications:
            ["id", "user_id", "kind", "room_id", "version_id", "actor_id", "comment_id", "excerpt", "created_at", "read_at"]
        }
    }

    var orderable: Set<String> {
        switch self {
        case .rooms: ["created_at", "updated_at", "feed_rank", "title", "quality_grade", "id"]
        case .roomVersions: ["created_at", "updated_at", "finished_at", "id"]
        case .redactions: ["created_at", "id"]
        case .comments: ["created_at", "id"]
        case .likes: ["created_at"]
        case .profiles: ["created_at", "updated_at", "id"]
        case .notifications: ["created_at", "id"]
        }
    }

    func column(_ name: String) -> Column? {
        let identity: Set<PostgRESTQuery.Operator> = [.eq, .in]
        let range: Set<PostgRESTQuery.Operator> = [.eq, .lt, .lte, .gt, .gte]
        switch (self, name) {
        case (.rooms, "id"), (.rooms, "owner_id"), (.rooms, "visibility"), (.rooms, "quality_grade"), (.rooms, "state"),
             (.rooms, "current_version_id"), (.rooms, "location_city"), (.roomVersions, "id"), (.roomVersions, "room_id"), (.roomVersions, "owner_id"),
             (.roomVersions, "status"), (.redactions, "id"), (.redactions, "version_id"), (.redactions, "kind"),
             (.redactions, "texture_ref"), (.comments, "id"), (.comments, "room_id"), (.comments, "author_id"),
             (.likes, "room_id"), (.likes, "user_id"), (.profiles, "id"), (.notifications, "id"), (.notifications, "kind"),
             (.notifications, "room_id"), (.notifications, "user_id"):
            return Column(name: name, operators: identity)
        case (.comments, "created_at"), (.notifications, "created_at"):
            return Column(name: name, operators: range)
        case (.notifications, "read_at"): return Column(name: name, operators: [.is])
        case (.rooms, "tags"): return Column(name: name, operators: [.cs])
        case (.rooms, "title"): return Column(name: name, operators: [.eq, .ilike, .like])
        case (.rooms, "created_at"), (.rooms, "feed_rank"), (.roomVersions, "created_at"), (.roomVersions, "updated_at"):
            return Column(name: name, operators: range)
        default: return nil
        }
    }
}
