import Foundation
import HTTPRouting
import ServiceLogging
import Synchronization
import Testing
@testable import WebSocketServer

/// `WebSocketClient` (libwebsockets' client mode) against the project's own server.
@Suite("WebSocket client", .serialized, .timeLimit(.minutes(2)))
struct WebSocketClientTests {
    static func url(_ server: WebSocketServer, query: String = "name=c") -> String {
        "ws://127.0.0.1:\(server.port)/realtime/v1/websocket?\(query)"
    }

    @Test("text round-trips in order (small, 200 KB, and 500 in a burst), the upgrade carries the headers and query, and close ends the stream")
    func roundTrip() async throws {
        let delegate = RecordingDelegate(echo: true)
        let server = try makeServer(delegate)
        defer { Task { await server.shutdown() } }
        let client = try await WebSocketClient.connect(to: Self.url(server, query: "name=c&vsn=1.0.0"),
                                                       headers: ["x-api-key": "key-1"], logger: .disabled)
        let request = try #require(delegate.events.withLock { $0.requests.first })
        #expect(request.query["vsn"] == "1.0.0" && request.query["name"] == "c")
        #expect(request.headers["x-api-key"] == "key-1")

        let big = String(repeating: "0123456789", count: 20_000)
        var sent = ["hello", "世界", big]
        sent += (0..<500).map { "burst \($0)" }
        for text in sent { #expect(client.send(text) == .queued) }
        var received: [String] = []
        for try await text in client.messages {
            received.append(text)
            if received.count == sent.count { break }
        }
        #expect(received == sent, "every message back whole and in order")
        #expect(delegate.events.withLock { $0.received.values.first ?? [] } == sent, "the server got them unmasked and whole")

        await client.close()
        #expect(client.send("late") == .closed)
        #expect(try await eventually { delegate.closed.count == 1 }, "the server saw the close")
    }

    @Test("a server close with 1000 finishes the stream; with 4000 it ends with connectionLost and the code")
    func serverCloses() async throws {
        let delegate = RecordingDelegate()
        let server = try makeServer(delegate)
        defer { Task { await server.shutdown() } }

        let normal = try await WebSocketClient.connect(to: Self.url(server, query: "name=normal"), logger: .disabled)
        #expect(try await eventually { delegate.connection(named: "normal") != nil })
        let first = try #require(delegate.connection(named: "normal"))
        first.close(after: "bye", code: 1000, reason: "done")
        var texts: [String] = []
        for try await text in normal.messages { texts.append(text) }
        #expect(texts == ["bye"])
        #expect(normal.serverCloseCode == 1000)

        let abnormal = try await WebSocketClient.connect(to: Self.url(server, query: "name=abnormal"), logger: .disabled)
        #expect(try await eventually { delegate.connection(named: "abnormal") != nil })
        let second = try #require(delegate.connection(named: "abnormal"))
        second.close(code: 4000, reason: "policy")
        await #expect {
            for try await _ in abnormal.messages {}
        } throws: { error in
            guard let error = error as? WebSocketError else { return false }
            return error.code == .connectionLost && error.context["ws.close_code"] == "4000"
        }
    }

    @Test("a refused upgrade throws handshakeRefused; nothing listening throws connectFailed; a https URL is invalid")
    func failures() async throws {
        let delegate = RecordingDelegate { _ in .reject(.unauthorized, error: "missing apikey") }
        let server = try makeServer(delegate)
        defer { Task { await server.shutdown() } }
        await #expect {
            _ = try await WebSocketClient.connect(to: Self.url(server), logger: .disabled)
        } throws: { error in
            (error as? WebSocketError)?.code == .handshakeRefused
        }
        #expect(delegate.opened.isEmpty)

        let unused = try makeServer(RecordingDelegate())
        let closedPort = unused.port
        await unused.shutdown()
        await #expect {
            _ = try await WebSocketClient.connect(to: "ws://127.0.0.1:\(closedPort)/realtime/v1/websocket", logger: .disabled)
        } throws: { error in
            (error as? WebSocketError)?.code == .connectFailed
        }
        await #expect {
            _ = try await WebSocketClient.connect(to: "https://example.invalid/x", logger: .disabled)
        } throws: { error in
            (error as? WebSocketError)?.code == .invalidURL
        }
    }
}
