import Foundation
import HTTPRouting
import HTTPServer
import ServiceLogging
import Synchronization
import Testing

struct SecretFailure: Error, CustomStringConvertible {
    var description: String { "database password is hunter2" }
}

struct NewItem: Codable, Sendable {
    var name: String
    var count: Int
}

/// Counts how many handlers run at the same time.
final class ConcurrencyProbe: Sendable {
    private let state = Mutex((current: 0, peak: 0, started: 0))

    func enter() { state.withLock { $0.current += 1; $0.started += 1; $0.peak = max($0.peak, $0.current) } }
    func leave() { state.withLock { $0.current -= 1 } }
    var peak: Int { state.withLock { $0.peak } }
    var started: Int { state.withLock { $0.started } }
    /// Handlers running now.
    var current: Int { state.withLock { $0.current } }
}

/// Five megabytes with a position-dependent pattern, so truncation or reordering shows.
let bigBody: [UInt8] = (0..<(5 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }

func makeRouter(probe: ConcurrencyProbe = ConcurrencyProbe(), slow: Duration = .milliseconds(500)) -> Router {
    var router = Router()
    router.post("/echo/:id") { request in
        let n = request.query["n"] ?? "-"
        let body = String(decoding: request.body, as: UTF8.self)
        return .text("id=\(request.pathParameters["id"] ?? "?") n=\(n) body=\(body)")
    }
    router.get("/describe/:name") { request in
        .json([
            "path": request.path,
            "name": request.pathParameters["name"] ?? "",
            "q": request.query["q"] ?? "",
            "x": request.query["x"] ?? "",
            "agent": request.headers["user-agent"] ?? "",
            "remote": request.remoteAddress ?? "",
        ])
    }
    router.post("/items") { request in
        let item = try request.decode(NewItem.self)
        return .json(item, status: .created)
    }
    router.get("/fail") { _ in throw SecretFailure() }
    router.get("/big") { _ in HTTPResponse(status: .ok, headers: ["Content-Type": "application/octet-stream"], body: bigBody) }
    router.get("/small") { _ in .text("small") }
    router.get("/slow") { _ in
        probe.enter()
        defer { probe.leave() }
        try await Task.sleep(for: slow)
        return .text("slow done")
    }
    return router
}

func makeServer(router: Router = makeRouter(), maxBodyBytes: Int = HTTPServerConfiguration.defaultMaxBodyBytes,
                maxConcurrentRequests: Int = 256, requestTimeout: Duration = .seconds(30), maxConnections: Int = 1024,
                onResponse: (@Sendable (HTTPRequest, HTTPResponse, Duration) -> Void)? = nil) throws -> (HTTPServer, Int) {
    let configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, maxBodyBytes: maxBodyBytes,
                                                requestTimeout: requestTimeout, maxConnections: maxConnections,
                                                maxConcurrentRequests: maxConcurrentRequests)
    let server = HTTPServer(configuration: configuration, router: router, logger: ProcessInfo.processInfo.environment["HTTP_TEST_LOG"] == nil ? .disabled : Logger(label: "test", level: .debug), onResponse: onResponse)
    try server.start()
    #expect(server.port > 0)
    return (server, server.port)
}

/// Runs `body` against a fresh server on an ephemeral port and always shuts the server down.
func withServer<T>(router: Router = makeRouter(), maxBodyBytes: Int = HTTPServerConfiguration.defaultMaxBodyBytes,
                   maxConcurrentRequests: Int = 256, requestTimeout: Duration = .seconds(30), maxConnections: Int = 1024,
                   onResponse: (@Sendable (HTTPRequest, HTTPResponse, Duration) -> Void)? = nil,
                   _ body: (_ port: Int) async throws -> T) async throws -> T {
    let (server, port) = try makeServer(router: router, maxBodyBytes: maxBodyBytes, maxConcurrentRequests: maxConcurrentRequests,
                                        requestTimeout: requestTimeout, maxConnections: maxConnections, onResponse: onResponse)
    do {
        let result = try await body(port)
        await server.shutdown(gracePeriod: .seconds(1))
        return result
    } catch {
        await server.shutdown(gracePeriod: .seconds(1))
        throw error
    }
}
