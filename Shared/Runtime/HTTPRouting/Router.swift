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

    private var routes: [Route] = []
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
        routes.append(Route(method: method, pattern: pattern, segments: segments, handler: handler))
    }

    /// A route whose handler reads the body while it arrives (`HTTPRequest.bodyStream`), for
    /// uploads too large to hold in memory; the server's body limit does not apply to it.
    public mutating func streaming(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping HTTPHandler) {
        on(method, pattern, handler)
        routes[routes.count - 1].streamsBody = true
    }

    /// Whether the request's route streams its body (a server asks this once the headers are in).
    public func streamsBody(_ method: HTTPMethod, _ path: String) -> Bool {
        match(method, path)?.0.streamsBody ?? false
    }

    public mutating func get(_ pattern: String, _ handler: @escaping HTTPHandler) { on(.get, pattern, handler) }
    public mutating func post(_ pattern: String, _ handler: @escaping HTTPHandler) { on(.post, pattern, handler) }
    public mutating func put(_ pattern: String, _ handler: @escaping HTTPHandler) { on(.put, pattern, handler) }
    public mutating func delete(_ pattern: String, _ handler: @escaping HTTPHandler) { on(.delete, pattern, handler) }

    /// Adds every route of another router (e.g. the runtime's health routes).
    public mutating func merge(_ other: Router) { routes.append(contentsOf: other.routes) }

    /// Finds the route for a request; `nil` with `methodAllowed == true` means 405.
    func match(_ method: HTTPMethod, _ path: String) -> (Route, [String: String])? {
        let parts = path.split(separator: "/").map(String.init)
        for route in routes {
            let takesRest = if case .rest = route.segments.last { true } else { false }
            guard takesRest ? parts.count >= route.segments.count : parts.count == route.segments.count else { continue }
            var parameters: [String: String] = [:]
            var ok = true
            for (index, (segment, part)) in zip(route.segments, parts).enumerated() {
                switch segment {
                case .literal(let literal): if literal != part { ok = false }
                case .parameter(let name): parameters[name] = part
                case .rest(let name): parameters[name] = parts[index...].joined(separator: "/")
                }
                if !ok { break }
            }
            if ok && (route.method == method || (method == .head && route.method == .get)) { return (route, parameters) }
        }
        return nil
    }

    /// The pattern a request is routed by (`/materials/:id`), for metrics labels that do not
    /// grow with ids; nil when no route matches.
    public func pattern(for method: HTTPMethod, path: String) -> String? {
        match(method, path)?.0.pattern
    }

    private func pathExists(_ path: String) -> Bool {
        HTTPMethod.allCases.contains { match($0, path) != nil }
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
        if let preflight = cors.preflight(request, pathExists: pathExists(request.path)) { return preflight }
        return cors.decorate(await routed(request), for: request)
    }

    private func routed(_ request: HTTPRequest) async -> HTTPResponse {
        guard let (route, parameters) = match(request.method, request.path) else {
            if pathExists(request.path) {
                return HTTPError(.methodNotAllowed, code: "METHOD_NOT_ALLOWED", message: "\(request.method.rawValue) is not allowed on \(request.path)").response
            }
            return HTTPError.notFound("no route for \(request.method.rawValue) \(request.path)").response
        }
        var request = request
        request.pathParameters = parameters
        do {
            return try await route.handler(request)
        } catch let error as HTTPError {
            return error.response
        } catch {
            return HTTPError.internalError.response
        }
    }
}
