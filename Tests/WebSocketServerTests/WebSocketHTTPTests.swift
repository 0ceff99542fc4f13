import Foundation
import HTTPRouting
import ServiceLogging
import Synchronization
import Testing
@testable import WebSocketServer

@Suite("Upgrade decisions and plain HTTP on the WebSocket port", .serialized, .timeLimit(.minutes(2)))
struct WebSocketHTTPTests {
    static let upgradeHeaders = [
        "-H", "Connection: Upgrade", "-H", "Upgrade: websocket",
        "-H", "Sec-WebSocket-Version: 13", "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
    ]

    static func requireAPIKey(_ request: WebSocketUpgradeRequest) -> WebSocketAcceptDecision {
        let key = request.headers["x-api-key"] ?? request.query["apikey"]
        return key == "good-key" ? .accept : .reject(.unauthorized, error: "invalid api key")
    }

    @Test("a refused upgrade is answered 401 with a JSON error body, and nothing is upgraded")
    func refusedUpgradeGets401() async throws {
        let delegate = RecordingDelegate(decide: Self.requireAPIKey)
        let server = try makeServer(delegate)
        let url = "http://127.0.0.1:\(server.port)/realtime/v1/websocket?vsn=1.0.0"
        let result = try await runProcess("/usr/bin/curl", ["-i", "-s", "--max-time", "5"] + Self.upgradeHeaders + [url])
        let lines = result.stdout.components(separatedBy: "\r\n")
        #expect(lines.first?.hasPrefix("HTTP/1.1 401") == true, "\(result.stdout)")
        #expect(lines.contains { $0.lowercased() == "content-type: application/json" })
        #expect(result.stdout.hasSuffix("{\"error\":\"invalid api key\"}"))

        let client = try RawWebSocketClient(port: server.port)
        let upgraded = try await blocking { try client.handshake(target: "/realtime/v1/websocket?apikey=wrong") }
        #expect(!upgraded)
        #expect(client.handshakeStatus == 401)
        #expect(client.handshakeBody == "{\"error\":\"invalid api key\"}")
        #expect(delegate.opened.isEmpty)
        await server.shutdown()
    }

    @Test("the delegate sees path, query, API key, authorization, user agent, origin and peer before accepting")
    func upgradeRequestCarriesHeadersAndQuery() async throws {
        let delegate = RecordingDelegate(decide: Self.requireAPIKey)
        let server = try makeServer(delegate)
        let client = try RawWebSocketClient(port: server.port)
        let upgraded = try await blocking {
            try client.handshake(target: "/realtime/v1/websocket?vsn=2.0.0&log_level=info%20x", headers: [
                "X-Api-Key": "good-key", "Authorization": "Bearer token-1", "User-Agent": "supabase-swift/2.44",
                "Origin": "https://app.example",
            ])
        }
        #expect(upgraded)
        #expect(try await eventually { delegate.opened.count == 1 })
        let request = try #require(delegate.opened.first?.request)
        #expect(request.path == "/realtime/v1/websocket")
        #expect(request.query["vsn"] == "2.0.0")
        #expect(request.query["log_level"] == "info x")
        #expect(request.headers["x-api-key"] == "good-key")
        #expect(request.headers["authorization"] == "Bearer token-1")
        #expect(request.headers["user-agent"] == "supabase-swift/2.44")
        #expect(request.headers["origin"] == "https://app.example")
        #expect(request.remoteAddress == "127.0.0.1")
        await server.shutdown()
    }

    @Test("an upgrade on another path is refused with 404 without asking the delegate")
    func upgradeOnWrongPathIs404() async throws {
        let delegate = RecordingDelegate()
        let server = try makeServer(delegate)
        let client = try RawWebSocketClient(port: server.port)
        let upgraded = try await blocking { try client.handshake(target: "/somewhere/else") }
        #expect(!upgraded)
        #expect(client.handshakeStatus == 404)
        #expect(client.handshakeBody.contains("\"error\""))
        #expect(delegate.events.withLock { $0.requests.isEmpty })
        await server.shutdown()
    }

    @Test("plain HTTP requests are answered by the router with status, headers and body intact")
    func httpRequestsAreRouted() async throws {
        var router = Router()
        router.get("/healthz") { _ in
            var response = HTTPResponse.text("ok\n")
            response.headers.add(name: "X-Served-By", value: "websocket-server")
            return response
        }
        router.get("/realtime/v1/channels/:channel/events") { request in
            try await Task.sleep(for: .milliseconds(50))
            return .json(["channel": request.pathParameters["channel"] ?? "", "after": request.query["after"] ?? ""],
                         status: .accepted)
        }
        router.post("/echo") { request in HTTPResponse(status: .created, headers: ["Content-Type": "application/octet-stream"], body: request.body) }
        let server = try makeServer(RecordingDelegate(), router: router)
        let base = "http://127.0.0.1:\(server.port)"

        let health = try await runProcess("/usr/bin/curl", ["-i", "-s", "--max-time", "5", "\(base)/healthz"])
        #expect(health.stdout.hasPrefix("HTTP/1.1 200"), "\(health.stdout)")
        #expect(health.stdout.lowercased().contains("x-served-by: websocket-server"))
        #expect(health.stdout.lowercased().contains("content-type: text/plain; charset=utf-8"))
        #expect(health.stdout.hasSuffix("\r\n\r\nok\n"))

        let events = try await runProcess("/usr/bin/curl", ["-i", "-s", "--max-time", "5", "\(base)/realtime/v1/channels/room:42/events?after=7"])
        #expect(events.stdout.hasPrefix("HTTP/1.1 202"), "\(events.stdout)")
        #expect(events.stdout.hasSuffix("{\"after\":\"7\",\"channel\":\"room:42\"}"))

        let big = String(repeating: "b", count: 150_000)
        let bodyFile = FileManager.default.temporaryDirectory.appendingPathComponent("ws-body-\(UUID().uuidString)").path
        try big.write(toFile: bodyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: bodyFile) }
        let echo = try await runProcess("/usr/bin/curl", ["-s", "--max-time", "5", "--data-binary", "@\(bodyFile)", "\(base)/echo"])
        #expect(echo.stdout == big)

        let head = try await runProcess("/usr/bin/curl", ["-I", "-s", "--max-time", "5", "\(base)/healthz"])
        #expect(head.stdout.hasPrefix("HTTP/1.1 200"), "\(head.stdout)")
        #expect(head.stdout.lowercased().contains("content-length: 3"))
        #expect(head.stdout.hasSuffix("\r\n\r\n"))

        let keepAlive = try await runProcess("/usr/bin/curl", ["-s", "--max-time", "5", "\(base)/healthz", "\(base)/healthz"])
        #expect(keepAlive.stdout == "ok\nok\n")

        let missing = try await runProcess("/usr/bin/curl", ["-i", "-s", "--max-time", "5", "\(base)/nope"])
        #expect(missing.stdout.hasPrefix("HTTP/1.1 404"), "\(missing.stdout)")
        #expect(missing.stdout.contains("\"code\":\"NOT_FOUND\""))

        // A 6 KB request line (a long token in the query) is answered, not cut off at lws's 4 KB default.
        let long = try await runProcess("/usr/bin/curl", ["-i", "-s", "--max-time", "5",
                                                          "\(base)/nope?apikey=" + String(repeating: "k", count: 6_000)])
        #expect(long.stdout.hasPrefix("HTTP/1.1 404"), "\(long.stdout.prefix(300))")
        await server.shutdown()
    }

    @Test("a path whose percent-decoded bytes are not UTF-8 is refused with INVALID_FIELD before routing, with or without a body")
    func pathNotUTF8IsRefused() async throws {
        var router = Router()
        router.get("/realtime/v1/channels/:channel/events") { request in .json(["channel": request.pathParameters["channel"] ?? ""]) }
        router.post("/echo/:name") { request in .json(["name": request.pathParameters["name"] ?? ""]) }
        let server = try makeServer(RecordingDelegate(), router: router)
        let base = "http://127.0.0.1:\(server.port)"
        for path in ["/realtime/v1/channels/room:%FF/events", "/realtime/v1/channels/room:a%C3/events",
                     "/realtime/v1/channels/room:%ED%A0%80/events"] {
            let refused = try await runProcess("/usr/bin/curl", ["-i", "-s", "--max-time", "5", base + path])
            #expect(refused.stdout.hasPrefix("HTTP/1.1 400"), "\(path): \(refused.stdout)")
            #expect(refused.stdout.contains("\"code\":\"INVALID_FIELD\""), "\(path): \(refused.stdout)")
        }
        let posted = try await runProcess("/usr/bin/curl", ["-i", "-s", "--max-time", "5", "--data-binary", "hello", "\(base)/echo/%FE"])
        #expect(posted.stdout.hasPrefix("HTTP/1.1 400"), "\(posted.stdout)")
        let utf8 = try await runProcess("/usr/bin/curl", ["-s", "--max-time", "5", "\(base)/realtime/v1/channels/room:%C3%A9/events"])
        #expect(utf8.stdout == "{\"channel\":\"room:é\"}", "\(utf8.stdout)")
        await server.shutdown()
    }

    @Test("starting on a port that is already taken fails with a retriable listen error")
    func portInUseFailsStart() async throws {
        let first = try makeServer(RecordingDelegate())
        let second = WebSocketServer(configuration: .init(host: "127.0.0.1", port: first.port), delegate: RecordingDelegate(),
                                     httpRouter: nil, logger: .disabled)
        do {
            try second.start()
            Issue.record("second server started on a taken port")
        } catch {
            #expect(error.code == .listenFailed)
            #expect(error.isRetriable)
        }
        await second.shutdown()
        await first.shutdown()
    }

    @Test("without a router every plain HTTP request gets a 404 JSON error")
    func noRouterMeans404() async throws {
        let server = try makeServer(RecordingDelegate())
        let result = try await runProcess("/usr/bin/curl", ["-i", "-s", "--max-time", "5", "http://127.0.0.1:\(server.port)/healthz"])
        #expect(result.stdout.hasPrefix("HTTP/1.1 404"), "\(result.stdout)")
        #expect(result.stdout.hasSuffix("{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"no route for GET \\/healthz\"}}")
                || result.stdout.hasSuffix("{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"no route for GET /healthz\"}}"))
        await server.shutdown()
    }
}
