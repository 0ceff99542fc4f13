import Foundation
import HTTPRouting
import Testing

@Suite("Router: a *rest segment takes the rest of the path")
struct RouterRestSegmentTests {
    static let router: Router = {
        var router = Router()
        router.get("/files/public/:bucket/*path") { request in
            .text("\(request.pathParameters["bucket"] ?? "?") \(request.pathParameters["path"] ?? "?")")
        }
        router.get("/files/public/:bucket/index") { _ in .text("never: the rest route was added first") }
        router.get("/files/:id") { request in .text("one \(request.pathParameters["id"] ?? "?")") }
        return router
    }()

    static func get(_ path: String) async -> (Int, String) {
        let response = await router.respond(to: HTTPRequest(method: .get, path: path))
        return (response.status.rawValue, String(decoding: response.body, as: UTF8.self))
    }

    @Test("one segment or many, joined with /; none at all is no match; other routes are unaffected")
    func rest() async {
        #expect(await Self.get("/files/public/rooms/a.webp") == (200, "rooms a.webp"))
        #expect(await Self.get("/files/public/rooms/rooms/r1/v1/layers/walls.glb") == (200, "rooms rooms/r1/v1/layers/walls.glb"))
        #expect(await Self.get("/files/public/rooms/index") == (200, "rooms index"))
        #expect(await Self.get("/files/public/rooms").0 == 404)
        #expect(await Self.get("/files/x") == (200, "one x"))
        #expect(await Self.router.respond(to: HTTPRequest(method: .post, path: "/files/public/rooms/a")).status.rawValue == 405)
    }
}
