import Contracts
import Foundation
import Postgres

/// One on-device redaction of a version, as `GET /rest/v1/redactions` answers it.
struct CatalogRedactionRow: Sendable, Equatable {
    /// Stable across rebuilds: a UUID made from the version id and the redaction's place in
    /// its request.
    var id: String
    var versionID: String
    var textureRef: String
    var kind: String
    var region: RedactionRegion
    var method: String
    /// When the request carrying it was made (upload-complete).
    var createdAt: Date
}

extension CatalogStore {
    /// The redactions of the versions `query` selects, one row per redaction of the version's
    /// newest request, in the order the app sent them. Row-level rule: the caller's own versions
    /// only (a service token: all) — where the faces were is the owner's to know, so anyone else
    /// gets no rows, as PostgREST with row-level security answers (seed `002_*` §4, P-2).
    func redactions(_ query: PostgRESTQuery, viewer: CatalogViewer) async throws -> [CatalogRedactionRow] {
        var sql = SQLBuilder()
        var inner: [String] = ["v.status <> 'abandoned'", "v.redactions IS NOT NULL"]
        if let user = viewer.userID { inner.append("v.owner_id = \(sql.bind(user))") }
        var outer: [String] = []
        for filter in query.filters {
            switch filter.column {
            case "version_id": inner.append(Self.identity(filter, "v.version_id", sql: &sql))
            default: outer.append(Self.identity(filter, "x.\(filter.column)", sql: &sql))
            }
        }
        var orderSQL = query.order.map { "x.\($0.column) \(Self.direction($0, nullable: false))" }
        orderSQL += ["x.version_id", "x.n"]
        let limit = sql.bind(Int64(query.limit ?? 1_000))
        let offset = sql.bind(Int64(query.offset))
        let text = """
            SELECT x.* FROM (
                SELECT md5(v.version_id || '/' || e.n)::uuid::text AS id, v.version_id, e.n,
                       e.r->>'textureRef' AS texture_ref, e.r->>'kind' AS kind, e.r->>'method' AS method,
                       (e.r->'region'->>'x')::float8 AS x, (e.r->'region'->>'y')::float8 AS y,
                       (e.r->'region'->>'width')::float8 AS width, (e.r->'region'->>'height')::float8 AS height,
                       COALESCE(v.requested_at, v.created_at) AS created_at
                FROM \(tables.versions) v CROSS JOIN LATERAL jsonb_array_elements(v.redactions) WITH ORDINALITY AS e(r, n)
                WHERE \(inner.joined(separator: " AND "))) x
            \(outer.isEmpty ? "" : "WHERE " + outer.joined(separator: " AND "))
            ORDER BY \(orderSQL.joined(separator: ", ")) LIMIT \(limit) OFFSET \(offset)
            """
        return try await database.query(text, sql.binds).map { row in
            CatalogRedactionRow(
                id: try row.decode(String.self, "id"), versionID: try row.decode(String.self, "version_id"),
                textureRef: try row.decode(String.self, "texture_ref"), kind: try row.decode(String.self, "kind"),
                region: RedactionRegion(x: try row.decode(Double.self, "x"), y: try row.decode(Double.self, "y"),
                                        width: try row.decode(Double.self, "width"), height: try row.decode(Double.self, "height")),
                method: try row.decode(String.self, "method"), createdAt: try row.decode(Date.self, "created_at"))
        }
    }
}
