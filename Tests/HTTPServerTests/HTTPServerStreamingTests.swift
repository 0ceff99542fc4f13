import Foundation
import HTTPRouting
import HTTPServer
import Synchronization
import Testing

/// Routes registered with `Router.streaming`: the handler reads the body while it arrives.
/// Which streaming routes saw their body break off.
final class Broken: Sendable {
    let names = Mutex<[String]>([])
}

@Suite("HTTPServer streamed bodies", .serialized, .timeLimit(.minutes(2)))
struct HTTPServerStreamingTests {
    /// Reads the whole stream on a thread of its own (slowly, with `pause`): its size and byte sum, or nil when it broke off.
    static func drain(_ stream: HTTPBodyStream, pause: UInt32 = 0) async throws -> (count: Int, sum: UInt64)? {
        try await onThread {
            var count = 0, sum: UInt64 = 0
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                guard let n = buffer.withUnsafeMutableBytes({ stream.read(into: $0) }) else { return nil }
                if n == 0 { return (count, sum) }
                count += n
                for byte in buffer.prefix(n) { sum &+= UInt64(byte) }
                if pause > 0 { usleep(pause) }
            }
        }
    }

    static func router(broken: Broken) -> Router {
        var router = Router()
        router.streaming(.post, "/count") { request in
            guard let stream = request.bodyStream, let counted = try await drain(stream, pause: 200) else {
                broken.names.withLock { $0.append("count") }
                return HTTPResponse(status: .badRequest)
            }
            broken.names.withLock { $0.append("read \(counted.count)") }
            return HTTPResponse(status: .ok, body: Array("n=\(counted.count) sum=\(counted.sum)".utf8))
        }
        router.streaming(.post, "/refuse") { _ in HTTPResponse(status: .forbidden, body: Array("no".utf8)) }
        router.post("/small") { request in HTTPResponse(status: .ok, body: Array("small=\(request.body.count)".utf8)) }
        return router
    }

    @Test("a 24 MiB body, 24× the body limit, reaches a slow reader whole and in order; the same connection then serves a whole-body route, whose limit still holds")
    func largeBodyToSlowReader() async throws {
        let broken = Broken()
        try await withServer(router: Self.router(broken: broken), maxBodyBytes: 1 << 20) { port in
            try await onThread {
                let body = (0..<(24 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) }
                let sum = body.reduce(UInt64(0)) { $0 &+ UInt64($1) }
                let connection = try RawHTTPConnection(port: port)
                let counted = try connection.request("POST", "/count", body: body)
                #expect(counted.status == 200 && counted.text == "n=\(body.count) sum=\(sum)", "\(counted.text)")
                let small = try connection.request("POST", "/small", body: Array(repeating: 1, count: 1000))
                #expect(small.status == 200 && small.text == "small=1000")
                // Just over the limit: the server reads the rest and answers 413 (a body a megabyte over
                // it would be cut off mid-send, and the client's write could fail before it reads the answer).
                let large = try RawHTTPConnection(port: port).request("POST", "/small", body: Array(repeating: 1, count: (1 << 20) + 1000))
                #expect(large.status == 413)
            }
        }
        #expect(broken.names.withLock { $0 } == ["read \(24 << 20)"])
    }

    @Test("a handler that answers before reading: the rest of the body is read and discarded, the answer arrives, and the connection serves the next request")
    func answerBeforeTheBody() async throws {
        try await withServer(router: Self.router(broken: Broken())) { port in
            try await onThread {
                let connection = try RawHTTPConnection(port: port)
                let refused = try connection.request("POST", "/refuse", body: Array(repeating: 2, count: 8 << 20))
                #expect(refused.status == 403 && refused.text == "no")
                let next = try connection.request("POST", "/small", body: Array(repeating: 1, count: 10))
                #expect(next.status == 200 && next.text == "small=10")
            }
        }
    }

    @Test("a client that goes away mid-body: by the connection's idle timeout at the latest, the reader learns the body broke off (nil), and the server goes on serving")
    func clientGoesAway() async throws {
        let broken = Broken()
        try await withServer(router: Self.router(broken: broken), requestTimeout: .seconds(2)) { port in
            try await onThread {
                let connection = try RawHTTPConnection(port: port)
                try connection.send("POST /count HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(4 << 20)\r\n\r\n")
                try connection.send(Array(repeating: 3, count: 1 << 20))
            }
            #expect(await eventually { broken.names.withLock { $0 } == ["count"] }, "\(broken.names.withLock { $0 })")
            let after = try await onThread { try RawHTTPConnection(port: port).request("POST", "/small", body: [1]) }
            #expect(after.status == 200)
        }
    }

    func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<100 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return false
    }
}
