import Logging

/// A route handler: a fully received request in, a response out.
public typealias HTTPHandler = @Sendable (HTTPRequest) async throws -> HTTPResponse

/// Matches method + path patterns such as `/materials/:id/reading-progress`.
/// Servers call `respond(to:)`; it renders every thrown error as `{"error":{…}}`.
public struct Router: Sendable {
    struct Route: Sendable {
        let method: HTTPMethod
        let pattern: String
        let segments: [Segment]
        let handler: HTTPHandler
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private var routes: [Route] = []
    /// Cross-origin access for browser apps (nil: no CORS headers, preflights are 404/405).
    public var cors: CORSPolicy?

    public init() {}

    public mutating func on(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping HTTPHandler) {
        let segments = pattern.split(separator: "/").map { part -> Segment in
            part.hasPrefix(":") ? .parameter(String(part.dropFirst())) : .literal(String(part))
        }
        routes.append(Route(method: method, pattern: pattern, segments: segments, handler: handler))
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
        for route in routes where route.segments.count == parts.count {
            var parameters: [String: String] = [:]
            var ok = true
            for (segment, part) in zip(route.segments, parts) {
                switch segment {
                case .literal(let literal): if literal != part { ok = false }
                case .parameter(let name): parameters[name] = part
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
    /// one, set as `TraceContext.current` for the handler (its Kafka records carry it, its log
    /// lines name a sampled one) and answered in `traceresponse`.
    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        let trace = request.headers[TraceContext.header].flatMap(TraceContext.init(traceparent:))?.child() ?? .start()
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
