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
        func isLetter(_ c: Unicode.Scalar) -> Bool { ("a"..."z").contains(c) || ("A"..."Z").contains(c) }
        func isDigit(_ c: Unicode.Scalar) -> Bool { ("0"..."9").contains(c) }
        guard let separator = text.range(of: "://") else { return false }
        // The scheme: a letter, then letters, digits, "+", "-", ".".
        let scheme = text[..<separator.lowerBound].unicodeScalars
        guard let first = scheme.first, isLetter(first),
              scheme.allSatisfy({ isLetter($0) || isDigit($0) || "+-.".unicodeScalars.contains($0) }) else { return false }
        // The host and port: printable ASCII, nothing that starts a path, query, fragment or user.
        let authority = text[separator.upperBound...]
        guard !authority.isEmpty, authority.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }),
              !authority.unicodeScalars.contains(where: { "/?#@\\".unicodeScalars.contains($0) }) else { return false }
        // The port: after the last colon, unless that colon is inside an IPv6 literal ([::1]).
        var host = authority
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            let port = authority[authority.index(after: colon)...]
            guard (1...5).contains(port.count), port.unicodeScalars.allSatisfy(isDigit), let number = Int(port),
                  (1...65_535).contains(number) else { return false }
            host = authority[..<colon]
        }
        return !host.isEmpty && host != "[]"
    }

    /// The value of `Access-Control-Allow-Origin` for `origin`, nil when it is not allowed.
    func allowOrigin(_ origin: String) -> String? {
        if allowedOrigins.contains("*") { return "*" }
        return allowedOrigins.contains(origin) ? origin : nil
    }

    /// The answer to a preflight, or nil when `request` is not one.
    func preflight(_ request: HTTPRequest, pathExists: Bool) -> HTTPResponse? {
        guard request.method == .options, let origin = request.headers["Origin"],
              request.headers["Access-Control-Request-Method"] != nil else { return nil }
        guard pathExists else { return HTTPError.notFound("no route for \(request.path)").response }
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
