import Foundation
import HTTPRouting
import HTTPServer
import ServiceLogging
import Synchronization
import Testing

@Suite("HTTPServer requests and responses", .serialized, .timeLimit(.minutes(2)))
struct HTTPServerTests {
    @Test("8 keep-alive clients x 200 requests each get their own echo back over one connection each")
    func concurrentKeepAliveLoad() async throws {
        try await withServer { port in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for client in 0..<8 {
                    group.addTask {
                        try await onThread {
                            let connection = try RawHTTPConnection(port: port)
                            var served = 0
                            for i in 0..<200 {
                                let body = "client \(client) says \(i) " + String(repeating: "x", count: i * 7)
                                let response = try connection.request("POST", "/echo/c\(client)?n=\(i)", body: Array(body.utf8))
                                guard response.status == 200, response.text == "id=c\(client) n=\(i) body=\(body)" else {
                                    throw RawHTTPConnection.Failure.malformed("client \(client) #\(i): \(response.status) \(response.text)")
                                }
                                served += 1
                            }
                            return served
                        }
                    }
                }
                var total = 0
                for try await served in group { total += served }
                #expect(total == 1600)
            }
        }
    }

    @Test("the path is percent-decoded, query arguments decoded, headers and peer address passed")
    func requestParsing() async throws {
        try await withServer { port in
            let response = try await onThread {
                try RawHTTPConnection(port: port).request("GET", "/describe/hello%20world?q=a+b%26c&x=%C3%A9t%C3%A9",
                                                          headers: ["User-Agent": "raw-test/1"])
            }
            #expect(response.status == 200)
            let json = try #require(response.json as? [String: String])
            #expect(json["path"] == "/describe/hello world")
            #expect(json["name"] == "hello world")
            #expect(json["q"] == "a b&c")
            #expect(json["x"] == "été")
            #expect(json["agent"] == "raw-test/1")
            #expect(json["remote"] == "127.0.0.1")
        }
    }

    @Test("a %00 in a query argument stays in its value (the handler sees it and can refuse it)")
    func queryKeepsNUL() async throws {
        try await withServer { port in
            let response = try await onThread {
                try RawHTTPConnection(port: port).request("GET", "/describe/a?q=7%00&x=%00")
            }
            #expect(response.status == 200)
            let json = try #require(response.json as? [String: String])
            #expect(json["q"] == "7\u{0}")
            #expect(json["x"] == "\u{0}")
        }
    }

    @Test("""
        a %00 in the path is refused (400 INVALID_FIELD) before any handler runs — libmicrohttpd would hand \
        over the path cut at the NUL, another resource's; an escaped percent sign before 00 is no NUL
        """)
    func pathWithNULIsRefused() async throws {
        try await withServer { port in
            let (refused, upper, body, next) = try await onThread {
                let refused = try RawHTTPConnection(port: port).request("GET", "/describe/a%00b")
                let upper = try RawHTTPConnection(port: port).request("GET", "/describe/a%00?q=1")
                let body = try RawHTTPConnection(port: port).request("POST", "/echo/x%00y", body: Array("hello".utf8))
                let next = try RawHTTPConnection(port: port).request("GET", "/describe/a%2500b?q=%00")
                return (refused, upper, body, next)
            }
            for response in [refused, upper, body] {
                #expect(response.status == 400, "\(response.text)")
                #expect(response.text.contains("\"INVALID_FIELD\""), "\(response.text)")
            }
            #expect(next.status == 200, "an escaped percent sign and a NUL in the query are not a NUL in the path")
            #expect((next.json as? [String: String])?["path"] == "/describe/a%00b")
        }
    }

    @Test("a path whose percent-decoded bytes are not UTF-8 is refused with INVALID_FIELD, not read as U+FFFD")
    func pathNotUTF8IsRefused() async throws {
        try await withServer { port in
            let (responses, utf8, replacement) = try await onThread {
                let responses = try ["/describe/%FF", "/describe/a%FF%FEb", "/describe/%C3", "/describe/%C0%AF", "/describe/%ED%A0%80"]
                    .map { try RawHTTPConnection(port: port).request("GET", $0) }
                    + [try RawHTTPConnection(port: port).request("POST", "/echo/%FF", body: Array("hello".utf8))]
                let utf8 = try RawHTTPConnection(port: port).request("GET", "/describe/%C3%A9t%C3%A9")
                // U+FFFD itself, sent as its UTF-8 bytes, is a character like any other.
                let replacement = try RawHTTPConnection(port: port).request("GET", "/describe/%EF%BF%BD")
                return (responses, utf8, replacement)
            }
            for response in responses {
                #expect(response.status == 400, "\(response.text)")
                #expect(response.text.contains("\"INVALID_FIELD\""), "\(response.text)")
            }
            #expect((utf8.json as? [String: String])?["path"] == "/describe/été")
            #expect((replacement.json as? [String: String])?["path"] == "/describe/\u{FFFD}")
        }
    }

    @Test("curl gets the echo over a reused connection", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")))
    func curlInterop() async throws {
        try await withServer { port in
            let output = try await onThread { () -> String in
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
                process.arguments = ["-sS", "-v", "-X", "POST", "--data-binary", "hello curl",
                                     "http://127.0.0.1:\(port)/echo/1?n=a", "http://127.0.0.1:\(port)/echo/2?n=b"]
                let pipe = Pipe()
                let errors = Pipe()
                process.standardOutput = pipe
                process.standardError = errors
                try process.run()
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                let log = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                return String(decoding: data, as: UTF8.self) + "\n--\n" + log
            }
            #expect(output.hasPrefix("id=1 n=a body=hello curlid=2 n=b body=hello curl"))
            #expect(output.contains("Re-using existing connection") || output.contains("Reusing existing connection"))
        }
    }

    @Test("a declared Content-Length over the limit is answered 413 without the body being sent")
    func payloadTooLargeByContentLength() async throws {
        try await withServer(maxBodyBytes: 1024) { port in
            let (response, closed) = try await onThread { () -> (RawHTTPConnection.Response, Bool) in
                let connection = try RawHTTPConnection(port: port)
                // Only the headers: a server waiting for the 50 MB body would hang here.
                try connection.send("POST /echo/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 50000000\r\n\r\n")
                let response = try connection.readResponse()
                return (response, connection.isClosedByPeer())
            }
            #expect(response.status == 413)
            #expect(response.errorCode == "PAYLOAD_TOO_LARGE")
            #expect(closed)
        }
    }

    @Test("a chunked body growing past the limit is answered 413")
    func payloadTooLargeChunked() async throws {
        try await withServer(maxBodyBytes: 1024) { port in
            let response = try await onThread { () -> RawHTTPConnection.Response in
                let connection = try RawHTTPConnection(port: port)
                var request = "POST /echo/1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                for _ in 0..<3 { request += "3e8\r\n" + String(repeating: "z", count: 1000) + "\r\n" }
                request += "0\r\n\r\n"
                try connection.send(request)
                return try connection.readResponse()
            }
            #expect(response.status == 413)
            #expect(response.errorCode == "PAYLOAD_TOO_LARGE")
        }
    }

    @Test("a body of exactly the limit, chunked or not, reaches the handler")
    func bodyAtLimit() async throws {
        try await withServer(maxBodyBytes: 1024) { port in
            let (plain, chunked) = try await onThread { () -> (RawHTTPConnection.Response, RawHTTPConnection.Response) in
                let connection = try RawHTTPConnection(port: port)
                let plain = try connection.request("POST", "/echo/1", body: Array(repeating: UInt8(ascii: "a"), count: 1024))
                try connection.send("POST /echo/2 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n200\r\n"
                                    + String(repeating: "b", count: 512) + "\r\n200\r\n" + String(repeating: "b", count: 512) + "\r\n0\r\n\r\n")
                return (plain, try connection.readResponse())
            }
            #expect(plain.status == 200)
            #expect(plain.text == "id=1 n=- body=" + String(repeating: "a", count: 1024))
            #expect(chunked.status == 200)
            #expect(chunked.text == "id=2 n=- body=" + String(repeating: "b", count: 1024))
        }
    }

    @Test("malformed JSON decoded by a handler is a 400 INVALID_JSON; valid JSON is accepted")
    func invalidJSON() async throws {
        try await withServer { port in
            let (bad, good) = try await onThread { () -> (RawHTTPConnection.Response, RawHTTPConnection.Response) in
                let connection = try RawHTTPConnection(port: port)
                let bad = try connection.request("POST", "/items", body: Array(#"{"name": "pen", "count": }"#.utf8))
                let good = try connection.request("POST", "/items", body: Array(#"{"name":"pen","count":3}"#.utf8))
                return (bad, good)
            }
            #expect(bad.status == 400)
            #expect(bad.errorCode == "INVALID_JSON")
            #expect(bad.header("Content-Type") == "application/json")
            #expect(good.status == 201)
            #expect(good.json?["name"] as? String == "pen")
        }
    }

    @Test("unknown routes are 404, wrong methods 405, unsupported methods 501, all as JSON errors")
    func routingErrors() async throws {
        try await withServer { port in
            let responses = try await onThread { () -> [RawHTTPConnection.Response] in
                let connection = try RawHTTPConnection(port: port)
                return [
                    try connection.request("GET", "/nowhere"),
                    try connection.request("DELETE", "/items"),
                    try connection.request("BREW", "/items"),
                ]
            }
            #expect(responses.map(\.status) == [404, 405, 501])
            #expect(responses.map(\.errorCode) == ["NOT_FOUND", "METHOD_NOT_ALLOWED", "NOT_IMPLEMENTED"])
            #expect(responses.allSatisfy { $0.header("Content-Type") == "application/json" })
        }
    }

    @Test("a handler error is a 500 INTERNAL that does not reveal the error text")
    func handlerErrorIsOpaque() async throws {
        try await withServer { port in
            let response = try await onThread { try RawHTTPConnection(port: port).request("GET", "/fail") }
            #expect(response.status == 500)
            #expect(response.errorCode == "INTERNAL")
            #expect(!response.text.contains("hunter2"))
        }
    }

    @Test("a 5 MB response body arrives intact, and HEAD gets the same headers without the body")
    func largeBodyAndHead() async throws {
        try await withServer { port in
            let (get, head, after) = try await onThread { () -> (RawHTTPConnection.Response, RawHTTPConnection.Response, RawHTTPConnection.Response) in
                let connection = try RawHTTPConnection(port: port)
                let get = try connection.request("GET", "/big")
                let head = try connection.request("HEAD", "/big")
                // The same connection still frames correctly: HEAD sent no body bytes.
                let after = try connection.request("GET", "/small")
                return (get, head, after)
            }
            #expect(get.status == 200)
            #expect(get.body.count == bigBody.count)
            #expect(get.body == bigBody)
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == String(bigBody.count))
            #expect(head.header("Content-Type") == "application/octet-stream")
            #expect(head.body.isEmpty)
            #expect(after.text == "small")
        }
    }

    @Test("the observer sees every response with method, path, status and latency")
    func responseObserver() async throws {
        let seen = Mutex<[(HTTPMethod, String, Int, Duration)]>([])
        let observe: @Sendable (HTTPRequest, HTTPResponse, Duration) -> Void = { request, response, latency in
            seen.withLock { $0.append((request.method, request.path, response.status.rawValue, latency)) }
        }
        try await withServer(maxBodyBytes: 16, onResponse: observe) { port in
            _ = try await onThread { () -> Int in
                let connection = try RawHTTPConnection(port: port)
                _ = try connection.request("GET", "/slow")
                _ = try connection.request("GET", "/nowhere")
                _ = try RawHTTPConnection(port: port).request("POST", "/echo/1", body: Array(repeating: 1, count: 64))
                return 0
            }
        }
        let records = seen.withLock { $0 }
        #expect(records.map(\.1) == ["/slow", "/nowhere", "/echo/1"])
        #expect(records.map(\.2) == [200, 404, 413])
        #expect(records.map(\.0) == [.get, .get, .post])
        #expect(records[0].3 >= .milliseconds(450))
    }

    @Test("no more handlers run at once than maxConcurrentRequests; the rest wait and still succeed")
    func concurrencyLimit() async throws {
        let probe = ConcurrencyProbe()
        try await withServer(router: makeRouter(probe: probe, slow: .milliseconds(150)), maxConcurrentRequests: 2) { port in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<6 {
                    group.addTask { try await onThread { try RawHTTPConnection(port: port).request("GET", "/slow").status } }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 6))
            #expect(probe.started == 6)
            #expect(probe.peak == 2)
        }
    }
}
