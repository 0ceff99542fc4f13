/// A router's answer for one request's method and path: the route (nil for a 404 or 405) and the
/// values of its `:name` and `*name` segments. Found once per request (`Router.resolve`) and kept
/// in `HTTPRequest.route`, so the server's streaming check, dispatch and the metrics label do
/// not match the path again.
public struct RouteMatch: Sendable {
    /// The table it was found in, and for what: `Router.respond(to:)` uses it only when all three
    /// are its request's.
    let table: RouteTable
    let method: HTTPMethod
    let path: String
    let route: Router.Route?
    let parameters: [String: String]

    /// The pattern the request is routed by (`/materials/:id`); nil when no route matches.
    public var pattern: String? { route?.pattern }

    /// Whether the route reads its body while it arrives (`Router.streaming`).
    public var streamsBody: Bool { route?.streamsBody ?? false }
}

/// A router's routes. Immutable: adding a route makes a new table, so the table a match was
/// found in tells which routes it was found among.
final class RouteTable: Sendable {
    let routes: [Router.Route]

    init(routes: [Router.Route]) { self.routes = routes }
}

extension Router.Route {
    /// Whether the path's segments (`Router.segments(of:)`) are this route's: as many (at least
    /// as many for a `*rest` route), and each literal segment equal.
    func accepts(_ parts: [Substring]) -> Bool {
        let takesRest = if case .rest = segments.last { true } else { false }
        guard takesRest ? parts.count >= segments.count : parts.count == segments.count else { return false }
        for (segment, part) in zip(segments, parts) {
            if case .literal(let literal) = segment, part != literal { return false }
        }
        return true
    }

    /// The values of the `:name` and `*name` segments of a path this route accepts; a `*rest`
    /// value is its segments joined with `/`.
    func parameters(_ parts: [Substring]) -> [String: String] {
        var parameters: [String: String] = [:]
        for (index, (segment, part)) in zip(segments, parts).enumerated() {
            switch segment {
            case .literal: continue
            case .parameter(let name): parameters[name] = String(part)
            case .rest(let name): parameters[name] = parts[index...].joined(separator: "/")
            }
        }
        return parameters
    }
}
