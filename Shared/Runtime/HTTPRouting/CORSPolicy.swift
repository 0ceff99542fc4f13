import Foundation

/// Cross-origin access for browser apps on other origins (the web remix editor calls the same
/// API as the iOS apps): a preflight `OPTIONS` with `Origin` and `Access-Control-Request-Method`
/// on any routed path is answered 204 with what may be sent, and every answer to an allowed
/// origin names it in `Access-Control-Allow-Origin`. An origin not allowed gets no CORS
/// headers, so the browser withholds the answer. Requests without `Origin` (apps, servers)
/// are untouched.
public struct CORSPolicy: Sendable {
    /// Allowed origins (`https://remix.example.com`), or `*` for any.
    public var allowedOrigins: [String]
    /// What Supabase's clients and our routes send: `apikey` and `x-client-info` on every call.
    public var allowedHeaders = "authorization, apikey, x-client-info, content-type, accept, accept-profile, content-profile, "
        + "prefer, range, idempotency-key, traceparent, tracestate, x-region"
    public var allowedMethods = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
    /// Response headers a browser app may read.
    public var exposedHeaders = "content-range, retry-after, idempotent-replayed, traceresponse, location"
    public var maxAgeSeconds = 86_400

    public init(allowedOrigins: [String] = ["*"]) {
        self.allowedOrigins = allowedOrigins
    }

    /// Whether `text` is an origin as a browser sends it in `Origin` (RFC 6454): a scheme,
    /// `://`, a host and an optional port (1–65535), nothing after — no path, not even `/`.
    public static func isOrigin(_ text: String) -> Bool {
        guard text.contains("://"), let parts = URLComponents(string: text), let scheme = parts.scheme, !scheme.isEmpty,
              let host = parts.host, !host.isEmpty, host != "[]", parts.path.isEmpty, parts.query == nil,
              parts.fragment == nil, parts.user == nil, parts.password == nil, !text.hasSuffix(":") else { return false }
        return parts.port.map { (1...65_535).contains($0) } ?? true
    }

    /// The value of `Access-Control-Allow-Origin` for `origin`, nil when it is not allowed.
    func allowOrigin(_ origin: String) -> String? {
        if allowedOrigins.contains("*") { return "*" }
        return allowedOrigins.contains(origin) ? origin : nil
    }

    /// The answer to a preflight, or nil when `request` is not one (`pathExists` is asked only of a preflight).
    func preflight(_ request: HTTPRequest, pathExists: () -> Bool) -> HTTPResponse? {
        guard request.method == .options, let origin = request.headers["Origin"],
              request.headers["Access-Control-Request-Method"] != nil else { return nil }
        guard pathExists() else { return HTTPError.notFound("no route for \(request.path)").response }
        var response = HTTPResponse(status: .noContent)
        guard let allowed = allowOrigin(origin) else { return response }
        response.headers.replaceOrAdd(name: "Access-Control-Allow-Origin", value: allowed)
        response.headers.replaceOrAdd(name: "Access-Control-Allow-Methods", value: allowedMethods)
        response.headers.replaceOrAdd(name: "Access-Control-Allow-Headers", value: allowedHeaders)
        response.headers.replaceOrAdd(name: "Access-Control-Max-Age", value: String(maxAgeSeconds))
        if allowed != "*" { response.headers.replaceOrAdd(name: "Vary", value: "Origin") }
        return response
    }

    /// `response` with the CORS headers for `request`'s origin, if it has an allowed one.
    func decorate(_ response: HTTPResponse, for request: HTTPRequest) -> HTTPResponse {
        guard let origin = request.headers["Origin"], let allowed = allowOrigin(origin) else { return response }
        var response = response
        response.headers.replaceOrAdd(name: "Access-Control-Allow-Origin", value: allowed)
        response.headers.replaceOrAdd(name: "Access-Control-Expose-Headers", value: exposedHeaders)
        if allowed != "*" { response.headers.replaceOrAdd(name: "Vary", value: "Origin") }
        return response
    }
}
