import HTTPRouting
import Testing

/// What a browser app on another origin (the web remix editor) needs from every public route.
@Suite("CORS: preflights and allowed origins")
struct CORSTests {
    static func router(_ origins: [String]) -> Router {
        var router = Router()
        router.post("/functions/v1/:name") { _ in .json(["ok": true], status: .created) }
        router.cors = CORSPolicy(allowedOrigins: origins)
        return router
    }

    static func request(_ method: HTTPMethod, _ path: String, _ headers: HTTPHeaders) -> HTTPRequest {
        HTTPRequest(method: method, path: path, headers: headers, body: [])
    }

    @Test("a preflight of a routed path is 204 with the methods and the headers Supabase's clients send; the answer names the origin")
    func preflight() async {
        let router = Self.router(["https://remix.example.com"])
        let answer = await router.respond(to: Self.request(.options, "/functions/v1/upload-init", [
            "Origin": "https://remix.example.com", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, apikey, x-client-info, content-type"]))
        #expect(answer.status == .noContent)
        #expect(answer.headers["Access-Control-Allow-Origin"] == "https://remix.example.com")
        #expect(answer.headers["Vary"] == "Origin")
        let allowed = answer.headers["Access-Control-Allow-Headers"] ?? ""
        for header in ["authorization", "apikey", "x-client-info", "content-type"] { #expect(allowed.contains(header)) }
        #expect(answer.headers["Access-Control-Allow-Methods"]?.contains("POST") == true)

        let post = await router.respond(to: Self.request(.post, "/functions/v1/upload-init", ["Origin": "https://remix.example.com"]))
        #expect(post.status == .created && post.headers["Access-Control-Allow-Origin"] == "https://remix.example.com")
        #expect(post.headers["Access-Control-Expose-Headers"]?.contains("retry-after") == true)
    }

    @Test("another origin gets no CORS headers; a request without Origin is untouched; an unrouted preflight is 404; * allows any")
    func refusals() async {
        let router = Self.router(["https://remix.example.com"])
        let stranger = await router.respond(to: Self.request(.options, "/functions/v1/x", [
            "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"]))
        #expect(stranger.headers["Access-Control-Allow-Origin"] == nil)
        let app = await router.respond(to: Self.request(.post, "/functions/v1/x", [:]))
        #expect(app.status == .created && app.headers["Access-Control-Allow-Origin"] == nil)
        let unrouted = await router.respond(to: Self.request(.options, "/nowhere", [
            "Origin": "https://remix.example.com", "Access-Control-Request-Method": "GET"]))
        #expect(unrouted.status == .notFound)
        let any = await Self.router(["*"]).respond(to: Self.request(.post, "/functions/v1/x", ["Origin": "http://localhost:5173"]))
        #expect(any.headers["Access-Control-Allow-Origin"] == "*" && any.headers["Vary"] == nil)
    }
}
