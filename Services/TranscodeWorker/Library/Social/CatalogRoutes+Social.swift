import Contracts
import Foundation
import HTTPRouting
import JSON

/// The social tables through the catalog's PostgREST surface (`GET /rest/v1/{comments,likes,
/// profiles,notifications}`: the writes of the first three are ingest's), and the recipient's
/// read marks, `PATCH /rest/v1/notifications?id=eq.X {"read_at": …}`: a mark is her own state
/// on her own list, written where the list is.
extension CatalogRoutes {
    func social(_ resource: CatalogResource, _ query: PostgRESTQuery, viewer: CatalogViewer, single: Bool) async throws -> ([UInt8], Int) {
        let rows = try await store.social(resource, query, viewer: viewer)
        try Self.checkSingle(single, rows.count)
        let authors = query.embeds.contains { $0.kind == .author }
            ? try await store.profiles(Array(Set(rows.compactMap { $0.text("author_id") })).sorted()) : [:]
        let renderer = CatalogRenderer(urls: [:], expiresAt: Date(), viewer: viewer)
        var writer = JSONWriter(capacity: 256 * max(1, rows.count))
        if !single { writer.beginArray() }
        for row in rows {
            renderer.write(row, resource: resource, columns: query.columns, embeds: query.embeds, authors: authors, to: &writer)
        }
        if !single { writer.endArray() }
        return (writer.bytes, rows.count)
    }

    func markRead(_ request: HTTPRequest) async throws -> HTTPResponse {
        let viewer = try await CatalogViewer.of(request, authenticator: authenticator)
        guard viewer != .anonymous else {
            throw HTTPError(.unauthorized, code: ErrorCode.unauthenticated.rawValue, message: "notifications are their recipient's: sign in")
        }
        var ids: [String] = []
        for (name, value) in request.query where !["select", "apikey"].contains(name) {
            guard name == "id", let filter = try? PostgRESTQuery.parseFilter(column: name, value, resource: .notifications),
                  filter.op == .eq || filter.op == .in else {
                throw HTTPError(.badRequest, code: ErrorCode.invalidQuery.rawValue, message: "notifications are marked by id=eq.X or id=in.(…)")
            }
            ids = filter.values
        }
        guard !ids.isEmpty else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidQuery.rawValue, message: "name the notifications: id=eq.X")
        }
        guard case .object(let fields)? = try? ContractCoding.decoder.decode(JSONValue.self, from: Data(request.body)),
              fields.count == 1, let value = fields["read_at"] else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "body: {\"read_at\": a timestamp, or null}")
        }
        let readAt: Date?
        switch value {
        case .null: readAt = nil
        case .string(let text):
            guard let date = ContractCoding.parseTimestamp(text) else {
                throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "read_at: an ISO 8601 timestamp, or null")
            }
            readAt = date
        default: throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "read_at: an ISO 8601 timestamp, or null")
        }
        let rows = try await store.markNotifications(ids, user: viewer.userID, readAt: readAt)
        cache.invalidate()
        let representation = request.headers.fields.contains {
            $0.name.lowercased() == "prefer" && $0.value.contains("return=representation")
        }
        guard representation else { return HTTPResponse(status: .noContent) }
        let renderer = CatalogRenderer(urls: [:], expiresAt: Date(), viewer: viewer)
        var writer = JSONWriter()
        writer.beginArray()
        for row in rows { renderer.write(row, resource: .notifications, columns: nil, embeds: [], authors: [:], to: &writer) }
        writer.endArray()
        return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json; charset=utf-8"], body: writer.bytes)
    }
}
