import ServiceLogging

/// A route handler: a fully received request in, a response out.
public typealias HTTPHandler = @Sendable (HTTPRequest) async throws -> HTTPResponse

/// Matches method + path patterns such as `/materials/:id/reading-progress`; a last segment
/// `*name` takes the rest of the path, one segment or more (`/storage/v1/object/public/rooms/*key`
/// → `key` = `rooms/r1/v1/thumbnail.webp`; empty segments are not kept, so a handler that cares
/// reads `request.path`). Servers call `respond(to:)`; it renders every thrown error as `{"error":{…}}`.
public struct Router: Sendable {
    struct Route: Sendable {
        let method: HTTPMethod
        let pattern: String
        let segments: [Segment]
        let handler: HTTPHandler
        var streamsBody = false
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
        /// The rest of the path (only as the last segment).
        case rest(String)
    }

    /// The routes, in the order they were added; replaced (never changed) when one is added, so a
    /// `RouteMatch` can tell whether it was found in this router's table.
    private var table = RouteTable(routes: [])
    /// Cross-origin access for browser apps (nil: no CORS headers, preflights are 404/405).
    public var cors: CORSPolicy?
    /// The share of requests without a `traceparent` whose new trace is sampled (0…1).
    public var traceSampleRatio: Double = 0

    public init() {}

    public mutating func on(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping HTTPHandler) {
        let segments = pattern.split(separator: "/").map { part -> Segment in
            if part.hasPrefix(":") { return .parameter(String(part.dropFirst())) }
            if part.hasPrefix("*") { return .rest(String(part.dropFirst())) }
            return .literal(String(part))
        }
        precondition(!segments.dropLast().contains { if case .rest = $0 { true } else { false } },
                     "a *rest segment must be the last of \(pattern)")
        table = RouteTable(routes: table.routes + [Route(method: method, pattern: pattern, segments: segments, handler: handler)])
    }

    /// A route whose handler reads the body while it arrives (`HTTPRequest.bodyStream`), for
    /// uploads too large to hold in memory; the server's body limit does not apply to it.
    public mutating func streaming(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping HTTPHandler) {
        on(method, pattern, handler)
        var routes = table.routes
        routes[routes.count - 1].streamsBody = true
        table = RouteTable(routes: routes)
    }

    /// Whether the request's route streams its body.
    public func streamsBody(_ method: HTTPMethod, _ path: String) -> Bool {
        match(method, path).streamsBody
    }

    /// Whether any route streams its body (its server then reads bodies through a larger buffer).
    public var hasStreamingRoutes: Bool { table.routes.contains { $0.streamsBody } }

    /// Finds the request's route once and keeps the answer in `request.route`, where the server's
    /// streaming check (`RouteMatch.streamsBody`), the metrics label (`RouteMatch.pattern`) and
    /// `respond(to:)` read it instead of matching the path again. A server calls it once the
    /// headers are in.
    public func resolve(_ request: inout HTTPRequest) {
        request.route = match(request.method, request.path)
    }

    public mutating func get(_ pattern: String, _ handler: @escaping HTTPHandler) { on(.get, pattern, handler) }
    public mutating func post(_ pattern: String, _ handler: @escaping HTTPHandler) { on(.post, pattern, handler) }
    public mutating func put(_ pattern: String, _ handler: @escaping HTTPHandler) { on(.put, pattern, handler) }
    public mutating func delete(_ pattern: String, _ handler: @escaping HTTPHandler) { on(.delete, pattern, handler) }

    /// Adds every route of another router (e.g. the runtime's health routes).
    public mutating func merge(_ other: Router) { table = RouteTable(routes: table.routes + other.table.routes) }

    /// The first route, in the order they were added, whose method is the request's (a GET route
    /// also answers HEAD) and whose segments accept the path's; its parameters are built only
    /// for it. A `RouteMatch` without a route is a 405 when `pathExists`, else a 404.
    func match(_ method: HTTPMethod, _ path: String) -> RouteMatch {
        let parts = Self.segments(of: path)
        for route in table.routes where route.method == method || (method == .head && route.method == .get) {
            if route.accepts(parts) {
                return RouteMatch(table: table, method: method, path: path, route: route, parameters: route.parameters(parts))
            }
        }
        return RouteMatch(table: table, method: method, path: path, route: nil, parameters: [:])
    }

    /// The path's segments as `path.split(separator: "/")` gives them (empty ones dropped). In an
    /// ASCII path every byte is a character, so the bytes are split — no grapheme breaking on
    /// the path every request takes. Past ASCII a `/` may begin a grapheme cluster (a combining
    /// mark after it), which splitting by characters keeps whole; such paths take that way.
    static func segments(of path: String) -> [Substring] {
        let utf8 = path.utf8
        guard !utf8.contains(where: { $0 >= 0x80 }) else { return path.split(separator: "/") }
        var parts: [Substring] = []
        parts.reserveCapacity(8)
        var start = utf8.startIndex, index = start
        while index != utf8.endIndex {
            if utf8[index] == UInt8(ascii: "/") {
                if start != index { parts.append(path[start..<index]) }
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        if start != utf8.endIndex { parts.append(path[start..<utf8.endIndex]) }
        return parts
    }

    /// The pattern a request is routed by (`/materials/:id`), for metrics labels that do not
    /// grow with ids; nil when no route matches.
    public func pattern(for method: HTTPMethod, path: String) -> String? {
        match(method, path).pattern
    }

    /// Whether a route of any method accepts the path.
    private func pathExists(_ path: String) -> Bool {
        let parts = Self.segments(of: path)
        return table.routes.contains { $0.accepts(parts) }
    }

    /// `request.route` when this router resolved it for the request's method and path, else a new match.
    private func route(of request: HTTPRequest) -> RouteMatch {
        if let found = request.route, found.table === table, found.method == request.method, found.path == request.path {
            return found
        }
        return match(request.method, request.path)
    }

    /// Routes the request and renders errors. Never throws.
    ///
    /// Every request is handled as a span of a W3C trace: the caller's (`traceparent`) or a new
    /// one (sampled at `traceSampleRatio`), set as `TraceContext.current` for the handler (its
    /// Kafka records carry it, its log lines name a sampled one) and answered in `traceresponse`.
    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        let trace = request.headers[TraceContext.header].flatMap(TraceContext.init(traceparent:))?.child()
            ?? .start(sampled: traceSampleRatio > 0 && Double.random(in: 0..<1) < traceSampleRatio)
        var response = await TraceContext.$current.withValue(trace) { await corsResponded(request) }
        response.headers.replaceOrAdd(name: TraceContext.responseHeader, value: trace.traceparent)
        return response
    }

    private func corsResponded(_ request: HTTPRequest) async -> HTTPResponse {
        guard let cors else { return await routed(request) }
        if let preflight = cors.preflight(request, pathExists: { pathExists(request.path) }) { return preflight }
        return cors.decorate(await routed(request), for: request)
    }

    private func routed(_ request: HTTPRequest) async -> HTTPResponse {
        let found = route(of: request)
        guard let route = found.route else {
            if pathExists(request.path) {
                return HTTPError(.methodNotAllowed, code: "METHOD_NOT_ALLOWED", message: "\(request.method.rawValue) is not allowed on \(request.path)").response
            }
            return HTTPError.notFound("no route for \(request.method.rawValue) \(request.path)").response
        }
        var request = request
        request.pathParameters = found.parameters
        do {
            return try await route.handler(request)
        } catch let error as HTTPError {
            return error.response
        } catch {
            return HTTPError.internalError.response
        }
    }
}
