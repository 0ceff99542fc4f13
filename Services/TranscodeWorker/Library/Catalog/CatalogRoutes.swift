import Auth
import Contracts
import Foundation
import HTTPRouting
import JSON
import Postgres
import ServiceLogging
import ServiceRuntime

/// `GET /rest/v1/rooms`, `GET /rest/v1/room_versions` and `GET /rest/v1/redactions`: the
/// PostgREST calls the CrowdRoom app makes (seed `002_*` §2.2 Flow B, §4 P-2, §6.2, R-iOS-5),
/// answered from the catalog read model with the row-level rules of `CatalogStore` and
/// presigned GET URLs for the outputs.
///
/// Auth as Supabase clients send it: `Authorization: Bearer <JWT>`, or else the `apikey`
/// header or parameter holding a token (the notifier accepts it the same way). A service
/// token sees every row.
struct CatalogRoutes: Sendable {
    let store: CatalogStore
    let authenticator: RequestAuthenticator
    let links: any OutputLinks
    let cache: CatalogAnswerCache
    let maxLimit: Int

    static let singleObject = "application/vnd.pgrst.object+json"

    func router() -> Router {
        var router = Router()
        router.get("/rest/v1/rooms") { request in try await self.respond(request, .rooms) }
        router.get("/rest/v1/room_versions") { request in try await self.respond(request, .roomVersions) }
        router.get("/rest/v1/redactions") { request in try await self.respond(request, .redactions) }
        for resource in [CatalogResource.comments, .likes, .profiles, .notifications] {
            router.get("/rest/v1/\(resource.name)") { request in try await self.respond(request, resource) }
        }
        router.on(.patch, "/rest/v1/notifications") { request in
            do { return try await self.markRead(request) } catch let error as HTTPError { return error.postgRESTResponse() }
        }
        return router
    }

    /// Errors carry PostgREST's top-level `code`/`message`/`details`/`hint` (what Supabase
    /// clients read into their `APIError`) next to the house `{"error":{"code","message"}}`.
    func respond(_ request: HTTPRequest, _ resource: CatalogResource) async throws -> HTTPResponse {
        do {
            return try await answer(request, resource)
        } catch let error as HTTPError {
            return error.postgRESTResponse()
        }
    }

    func answer(_ request: HTTPRequest, _ resource: CatalogResource) async throws -> HTTPResponse {
        let viewer = try await CatalogViewer.of(request, authenticator: authenticator)
        if let profile = request.headers["Accept-Profile"], profile != "public" {
            throw PostgRESTQuery.unsupported(.unsupportedParameter, "only the public schema is served (Accept-Profile: \(profile))")
        }
        let single = request.headers["Accept"]?.contains(Self.singleObject) == true
        let key = Self.cacheKey(request, resource, viewer: viewer, single: single)
        if let (body, headers) = cache.answer(key) { return HTTPResponse(status: .ok, headers: headers, body: body) }
        let generation = cache.generation
        let query = try PostgRESTQuery.parse(request.query, resource: resource, maxLimit: maxLimit)
        let rendered: (body: [UInt8], count: Int)
        do {
            switch resource {
            case .rooms: rendered = try await rooms(query, viewer: viewer, single: single)
            case .roomVersions: rendered = try await versions(query, viewer: viewer, single: single)
            case .redactions: rendered = try await redactions(query, viewer: viewer, single: single)
            case .comments, .likes, .profiles, .notifications:
                rendered = try await social(resource, query, viewer: viewer, single: single)
            }
        } catch let error as PostgresError where error.sqlState?.hasPrefix("22") == true {
            // Data exceptions: a value PostgreSQL cannot take (a malformed timestamp in a filter).
            throw PostgRESTQuery.invalid("a filter value is not valid for its column")
        }
        var headers: HTTPHeaders = [:]
        headers.add(name: "Content-Type", value: single ? "\(Self.singleObject); charset=utf-8" : "application/json; charset=utf-8")
        headers.add(name: "Content-Range", value: rendered.count == 0 ? "*/*" : "\(query.offset)-\(query.offset + rendered.count - 1)/*")
        cache.store(key, body: rendered.body, headers: headers, generation: generation)
        return HTTPResponse(status: .ok, headers: headers, body: rendered.body)
    }

    static func cacheKey(_ request: HTTPRequest, _ resource: CatalogResource, viewer: CatalogViewer, single: Bool) -> String {
        var key = resource.name
        switch viewer {
        case .user(let id): key += "|u:" + id
        case .anonymous: key += "|a"
        case .service: key += "|s"
        }
        key += single ? "|1" : "|*"
        for (name, value) in request.query.sorted(by: { $0.key < $1.key }) where name != "apikey" {
            key += "|" + name + "=" + value
        }
        return key
    }

    func rooms(_ query: PostgRESTQuery, viewer: CatalogViewer, single: Bool) async throws -> ([UInt8], Int) {
        let rooms = try await store.rooms(query, viewer: viewer)
        try Self.checkSingle(single, rooms.count)
        var embedded: [PostgRESTQuery.Embed: [CatalogVersionRow]] = [:]
        for embed in query.embeds where !rooms.isEmpty {
            embedded[embed] = try await store.embedded(embed.kind, rooms: rooms, viewer: viewer)
        }
        var keys: [String] = []
        for room in rooms where room.currentVersionID != nil {
            if let thumbnail = room.thumbnailKey { keys.append(Self.webpKey(thumbnail)) }
            if let manifest = room.manifestKey { keys.append(manifest) }
        }
        for versions in embedded.values { for version in versions { keys += Self.outputKeys(version) } }
        let (urls, expires) = keys.isEmpty ? ([:], Date()) : try await links.presign(Self.distinct(keys))
        let renderer = CatalogRenderer(urls: urls, expiresAt: expires, viewer: viewer)
        var writer = JSONWriter(capacity: 512 * max(1, rooms.count))
        if !single { writer.beginArray() }
        for room in rooms {
            renderer.write(room, columns: query.columns, embeds: query.embeds, embedded: embedded, to: &writer)
        }
        if !single { writer.endArray() }
        return (writer.bytes, rooms.count)
    }

    func versions(_ query: PostgRESTQuery, viewer: CatalogViewer, single: Bool) async throws -> ([UInt8], Int) {
        let versions = try await store.versions(query, viewer: viewer)
        try Self.checkSingle(single, versions.count)
        let keys = versions.flatMap(Self.outputKeys)
        let (urls, expires) = keys.isEmpty ? ([:], Date()) : try await links.presign(Self.distinct(keys))
        let renderer = CatalogRenderer(urls: urls, expiresAt: expires, viewer: viewer)
        var writer = JSONWriter(capacity: 512 * max(1, versions.count))
        if !single { writer.beginArray() }
        for version in versions { renderer.write(version, columns: query.columns, to: &writer) }
        if !single { writer.endArray() }
        return (writer.bytes, versions.count)
    }

    func redactions(_ query: PostgRESTQuery, viewer: CatalogViewer, single: Bool) async throws -> ([UInt8], Int) {
        let rows = try await store.redactions(query, viewer: viewer)
        try Self.checkSingle(single, rows.count)
        let renderer = CatalogRenderer(urls: [:], expiresAt: Date(), viewer: viewer)
        var writer = JSONWriter(capacity: 256 * max(1, rows.count))
        if !single { writer.beginArray() }
        for row in rows { renderer.write(row, columns: query.columns, to: &writer) }
        if !single { writer.endArray() }
        return (writer.bytes, rows.count)
    }

    static func checkSingle(_ single: Bool, _ count: Int) throws(HTTPError) {
        guard single, count != 1 else { return }
        throw HTTPError(HTTPStatus(406), code: ErrorCode.notSingleRow.rawValue,
                        message: "JSON object requested, multiple (or no) rows returned (\(count) rows)")
    }

    /// Each key once, in first-seen order (a room's current version is also embedded).
    static func distinct(_ keys: [String]) -> [String] {
        var seen = Set<String>()
        return keys.filter { seen.insert($0).inserted }
    }

    /// The outputs of a ready version that get presigned URLs.
    static func outputKeys(_ version: CatalogVersionRow) -> [String] {
        guard version.status == RoomVersionStatus.ready.rawValue else { return [] }
        var keys = version.glbKeys
        if let manifest = version.manifestKey { keys.append(manifest) }
        if let thumbnail = version.thumbnailKey { keys.append(webpKey(thumbnail)) }
        return keys
    }

    /// The worker writes `thumbnail.png` and `thumbnail.webp` side by side; its `ready` status names
    /// the WebP the app's cards load (seed `002_*` §2.2) — a status from before that named the PNG.
    static func webpKey(_ pngKey: String) -> String {
        pngKey.hasSuffix(".png") ? String(pngKey.dropLast(4)) + ".webp" : pngKey
    }
}
