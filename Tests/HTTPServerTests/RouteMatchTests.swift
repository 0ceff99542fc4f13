import Foundation
import HTTPRouting
import HTTPServer
import Synchronization
import Testing

/// The route is matched once per request and carried with it; these pin the matching rules that
/// the byte-wise segment split and the once-per-request match must keep.
@Suite("Router: one match per request, the same rules")
struct RouteMatchTests {
    static let router: Router = {
        var router = Router()
        router.get("/materials/:id/reading-progress") { .text("progress \($0.pathParameters["id"] ?? "?")") }
        router.put("/materials/:id") { .text("put \($0.pathParameters["id"] ?? "?")") }
        router.get("/materials/latest") { _ in .text("latest, added before /materials/:id") }
        router.get("/materials/:id") { .text("get \($0.pathParameters["id"] ?? "?")") }
        router.get("/materials/café") { _ in .text("never: /materials/:id was added first") }
        router.get("/café/menu") { _ in .text("menu") }
        router.get("/") { _ in .text("root") }
        router.streaming(.put, "/uploads/*key") { .text("upload \($0.pathParameters["key"] ?? "?")") }
        return router
    }()

    static func answer(_ method: HTTPMethod, _ path: String, by router: Router = router) async -> (Int, String) {
        let response = await router.respond(to: HTTPRequest(method: method, path: path))
        return (response.status.rawValue, String(decoding: response.body, as: UTF8.self))
    }

    @Test("parameters, the first matching route in the order added, HEAD answered by a GET route, empty segments ignored")
    func rules() async {
        #expect(await Self.answer(.get, "/materials/m-1/reading-progress") == (200, "progress m-1"))
        #expect(await Self.answer(.head, "/materials/m-1/reading-progress") == (200, "progress m-1"))
        #expect(await Self.answer(.get, "/materials/latest") == (200, "latest, added before /materials/:id"))
        #expect(await Self.answer(.get, "//materials///m-2//") == (200, "get m-2"))
        #expect(await Self.answer(.put, "/materials/m-3") == (200, "put m-3"))
        #expect(await Self.answer(.get, "/") == (200, "root"))
        #expect(await Self.answer(.get, "") == (200, "root"))
        #expect(await Self.answer(.put, "/uploads/rooms//r1/a.glb") == (200, "upload rooms/r1/a.glb"))
    }

    @Test("a path a route of another method takes is 405, a path no route takes 404, HEAD of a PUT-only path 405")
    func notAllowedOrNotFound() async {
        #expect(await Self.answer(.delete, "/materials/m-1").0 == 405)
        #expect(await Self.answer(.post, "/materials/m-1/reading-progress").0 == 405)
        #expect(await Self.answer(.head, "/uploads/a").0 == 405)
        #expect(await Self.answer(.get, "/uploads").0 == 404)
        #expect(await Self.answer(.get, "/materials/m-1/reading-progress/more").0 == 404)
        #expect(await Self.answer(.get, "/Materials/m-1").0 == 404)
    }

    @Test("decoded paths past ASCII: a segment is compared as text (é composed or not), and a / that begins a character does not split")
    func unicodePaths() async {
        #expect(await Self.answer(.get, "/materials/café") == (200, "get café"))
        #expect(await Self.answer(.get, "/cafe\u{301}/menu") == (200, "menu"))
        #expect(await Self.answer(.get, "/materials/a\u{301}b") == (200, "get a\u{301}b"))
        // "/" followed by a combining mark is one character, not a separator.
        #expect(await Self.answer(.get, "/materials/x/\u{301}y") == (200, "get x/\u{301}y"))
        #expect(await Self.answer(.get, "/materials/%2F") == (200, "get %2F"))
    }

    @Test("resolve keeps the route with the request: its pattern, whether it streams, and a 404/405 has none")
    func resolved() {
        func resolve(_ method: HTTPMethod, _ path: String) -> RouteMatch? {
            var request = HTTPRequest(method: method, path: path)
            Self.router.resolve(&request)
            return request.route
        }
        #expect(resolve(.get, "/materials/m-9/reading-progress")?.pattern == "/materials/:id/reading-progress")
        #expect(resolve(.head, "/materials/m-9")?.pattern == "/materials/:id")
        #expect(resolve(.put, "/uploads/a/b")?.streamsBody == true)
        #expect(resolve(.get, "/materials/m-9")?.streamsBody == false)
        #expect(resolve(.delete, "/materials/m-9").map { $0.pattern == nil } == true)
        #expect(Self.router.pattern(for: .get, path: "/nope") == nil)
        #expect(Self.router.streamsBody(.put, "/uploads/k") && !Self.router.streamsBody(.get, "/materials/m"))
    }

    @Test("a route resolved by one router, or for another path, is not what another router or the changed request dispatches to")
    func staleMatchesAreNotUsed() async {
        var other = Router()
        other.get("/materials/:id") { .text("other \($0.pathParameters["id"] ?? "?")") }
        var request = HTTPRequest(method: .get, path: "/materials/m-1")
        Self.router.resolve(&request)
        let byOther = await other.respond(to: request)
        #expect(String(decoding: byOther.body, as: UTF8.self) == "other m-1")
        request.path = "/materials/m-2/reading-progress"
        let changed = await Self.router.respond(to: request)
        #expect(String(decoding: changed.body, as: UTF8.self) == "progress m-2")
        request.method = .put
        request.path = "/materials/m-3"
        #expect(String(decoding: await Self.router.respond(to: request).body, as: UTF8.self) == "put m-3")
    }

    @Test("through the server, the observer sees each request with the route it was dispatched by")
    func serverCarriesTheRoute() async throws {
        let seen = Mutex<[String]>([])
        let observe: @Sendable (HTTPRequest, HTTPResponse, Duration) -> Void = { request, response, _ in
            seen.withLock { $0.append("\(response.status.rawValue) \(request.route.map { $0.pattern ?? "none" } ?? "unresolved")") }
        }
        try await withServer(router: Self.router, onResponse: observe) { port in
            _ = try await onThread { () -> Int in
                let connection = try RawHTTPConnection(port: port)
                _ = try connection.request("GET", "/materials/m-1/reading-progress")
                _ = try connection.request("HEAD", "/materials/m-1")
                _ = try connection.request("DELETE", "/materials/m-1")
                _ = try connection.request("GET", "/nowhere")
                _ = try connection.request("PUT", "/uploads/a/b", body: Array("xyz".utf8))
                return 0
            }
        }
        #expect(seen.withLock { $0 } == ["200 /materials/:id/reading-progress", "200 /materials/:id", "405 none", "404 none",
                                         "200 /uploads/*key"])
    }
}

@Suite("HTTP header names")
struct HeaderNameTests {
    @Test("names are found in any case; bytes that differ by case only outside letters are different names")
    func caseInsensitive() {
        let headers: HTTPHeaders = ["content-LENGTH": "12", "TraceParent": "t", "X-A@": "at", "authorization": "Bearer x"]
        #expect(headers["Content-Length"] == "12" && headers["CONTENT-LENGTH"] == "12" && headers["content-length"] == "12")
        #expect(headers["traceparent"] == "t" && headers["AUTHORIZATION"] == "Bearer x")
        #expect(headers["x-a@"] == "at" && headers["X-A`"] == nil)  // @ and ` differ by 0x20 but are not letters
        #expect(headers["Content-Lengt"] == nil && headers["Content-Lengths"] == nil && headers["Origin"] == nil)
        #expect(!HTTPHeaders.namesEqual("[", "{") && !HTTPHeaders.namesEqual("a", "A-") && HTTPHeaders.namesEqual("", ""))
    }

    @Test("a name past ASCII is compared as text, case folded, as before")
    func unicodeNames() {
        let headers: HTTPHeaders = ["X-Straße": "s", "X-ÉTÉ": "e"]
        #expect(headers["x-straße"] == "s")
        #expect(headers["x-été"] == "e")
        #expect(HTTPHeaders.namesEqual("X-ÉTÉ", "x-été") == ("X-ÉTÉ".caseInsensitiveCompare("x-été") == .orderedSame))
        for (a, b) in [("K", "\u{212A}"), ("X-Straße", "x-STRASSE"), ("e\u{301}", "É"), ("ab", "ab\u{301}")] {
            #expect(HTTPHeaders.namesEqual(a, b) == (a.caseInsensitiveCompare(b) == .orderedSame), "\(a) \(b)")
        }
    }

    @Test("replaceOrAdd replaces every field of the name, in any case, and keeps the others in order")
    func replace() {
        var headers: HTTPHeaders = ["Vary": "a", "X-One": "1", "VARY": "b"]
        headers.replaceOrAdd(name: "vary", value: "Origin")
        #expect(headers.fields.map(\.name) == ["X-One", "vary"] && headers["Vary"] == "Origin")
    }
}
