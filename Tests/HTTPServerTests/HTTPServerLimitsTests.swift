import Foundation
import HTTPRouting
import HTTPServer
import Testing

@Suite("HTTPServer connection limits", .serialized, .timeLimit(.minutes(2)))
struct HTTPServerLimitsTests {
    @Test("a client expecting 100-continue with an oversized body gets 413 instead of 100 Continue")
    func expectContinueRefused() async throws {
        try await withServer(maxBodyBytes: 1024) { port in
            let response = try await onThread { () -> RawHTTPConnection.Response in
                let connection = try RawHTTPConnection(port: port)
                try connection.send("POST /echo/1 HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4096\r\n\r\n")
                return try connection.readResponse()
            }
            #expect(response.status == 413)
            #expect(response.errorCode == "PAYLOAD_TOO_LARGE")
        }
    }

    @Test("a client expecting 100-continue with an acceptable body gets 100 Continue and then its answer")
    func expectContinueAccepted() async throws {
        try await withServer(maxBodyBytes: 1024) { port in
            let (interim, final) = try await onThread { () -> (RawHTTPConnection.Response, RawHTTPConnection.Response) in
                let connection = try RawHTTPConnection(port: port)
                try connection.send("POST /echo/1 HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
                let interim = try connection.readResponse(isHead: true)
                try connection.send("hello")
                return (interim, try connection.readResponse())
            }
            #expect(interim.status == 100)
            #expect(final.status == 200)
            #expect(final.text == "id=1 n=- body=hello")
        }
    }

    @Test("an idle keep-alive connection is closed after requestTimeout")
    func idleTimeout() async throws {
        try await withServer(requestTimeout: .seconds(1)) { port in
            let (status, idleFor) = try await onThread { () -> (Int, Duration) in
                let connection = try RawHTTPConnection(port: port)
                let status = try connection.request("GET", "/small").status
                let clock = ContinuousClock()
                let start = clock.now
                _ = connection.isClosedByPeer()
                return (status, start.duration(to: clock.now))
            }
            #expect(status == 200)
            #expect(idleFor >= .milliseconds(900))
            #expect(idleFor < .seconds(4))
        }
    }

    @Test("connections beyond maxConnections are not served while the others stay open")
    func connectionLimit() async throws {
        try await withServer(maxConnections: 2) { port in
            let (first, second, thirdServed, afterwards) = try await onThread { () -> (Int, Int, Bool, Int) in
                let a = try RawHTTPConnection(port: port)
                let b = try RawHTTPConnection(port: port)
                let first = try a.request("GET", "/small").status
                let second = try b.request("GET", "/small").status
                let thirdServed: Bool
                do {
                    let c = try RawHTTPConnection(port: port, timeoutSeconds: 2)
                    thirdServed = (try? c.request("GET", "/small").status) == 200
                }
                let afterwards = try a.request("GET", "/small").status
                return (first, second, thirdServed, afterwards)
            }
            #expect(first == 200 && second == 200)
            #expect(!thirdServed)
            #expect(afterwards == 200)
        }
    }

    @Test("a request carrying a 12 KB token and 8 KB more of headers is answered on the 24 KiB connection pool, and one with 40 KB of headers gets 431 while the server goes on")
    func headerSizes() async throws {
        try await withServer { port in
            let (big, tooBig, after) = try await onThread { () -> (RawHTTPConnection.Response, Int, Int) in
                let token = String(repeating: "t", count: 12_000)
                let big = try RawHTTPConnection(port: port).request("GET", "/describe/x",
                                                                    headers: ["User-Agent": token, "X-More": String(repeating: "m", count: 8_000)])
                let tooBig = (try? RawHTTPConnection(port: port).request("GET", "/describe/x",
                                                                          headers: ["User-Agent": String(repeating: "u", count: 40_000)]))?.status ?? 0
                let after = try RawHTTPConnection(port: port).request("GET", "/small").status
                return (big, tooBig, after)
            }
            #expect(big.status == 200)
            #expect((big.json?["agent"] as? String)?.count == 12_000)
            #expect(tooBig == 431)
            #expect(after == 200)
        }
    }

    @Test("a server with streaming routes keeps the 64 KiB pool: 40 KB of headers are answered")
    func streamingServerPool() async throws {
        var router = makeRouter()
        router.streaming(.put, "/upload") { _ in .json(["ok": true]) }
        #expect(router.hasStreamingRoutes && !makeRouter().hasStreamingRoutes)
        try await withServer(router: router) { port in
            let response = try await onThread {
                try RawHTTPConnection(port: port).request("GET", "/describe/x", headers: ["User-Agent": String(repeating: "u", count: 40_000)])
            }
            #expect(response.status == 200)
            #expect((response.json?["agent"] as? String)?.count == 40_000)
        }
    }
}
