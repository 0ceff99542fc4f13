import Foundation
import HTTPRouting
import ServiceLogging
import Synchronization
import Testing
@testable import WebSocketServer

@Suite("WebSocket messaging", .serialized, .timeLimit(.minutes(2)))
struct WebSocketMessagingTests {
    @Test("small, 200 KB and fragmented text messages come back whole")
    func echoesTextMessages() async throws {
        let delegate = RecordingDelegate(echo: true)
        let server = try makeServer(delegate)
        let client = try await connectClient(server, name: "echo")
        let large = String(repeating: "0123456789abcdef", count: 200 * 1024 / 16)
        let replies = try await blocking { () -> [RawWebSocketClient.Message] in
            try client.sendText("hello")
            let first = try client.readMessage()
            try client.sendText(large)
            let second = try client.readMessage()
            try client.sendText("fragmented message in three frames", fragments: 3)
            let third = try client.readMessage()
            try client.sendText(large, fragments: 7)
            let fourth = try client.readMessage()
            return [first, second, third, fourth]
        }
        #expect(replies[0] == .text("hello"))
        #expect(replies[1] == .text(large))
        #expect(replies[2] == .text("fragmented message in three frames"))
        #expect(replies[3] == .text(large))
        await server.shutdown()
    }

    @Test("a real client library (Python websockets) round-trips plain and fragmented messages")
    func pythonClientRoundTrips() async throws {
        let delegate = RecordingDelegate(echo: true)
        let server = try makeServer(delegate)
        let script = """
        import asyncio, sys
        from websockets.asyncio.client import connect
        async def main():
            async with connect(f"ws://127.0.0.1:{sys.argv[1]}/realtime/v1/websocket?vsn=2.0.0",
                               additional_headers={"x-api-key": "k"}, max_size=None) as ws:
                await ws.send("ping from python")
                assert await ws.recv() == "ping from python"
                big = "x" * 300000
                await ws.send(big)
                assert await ws.recv() == big
                await ws.send(["frag-", "ment-", "ed"])
                assert await ws.recv() == "frag-ment-ed"
                print("OK")
        asyncio.run(main())
        """
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ws-echo-\(UUID().uuidString).py").path
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try await runProcess("/usr/bin/env", ["python3", path, String(server.port)])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("OK"))
        #expect(delegate.events.withLock { $0.received.values.first } == ["ping from python", String(repeating: "x", count: 300000), "frag-ment-ed"])
        await server.shutdown()
    }

    @Test("1,000 messages sent from another thread all arrive, in order")
    func thousandMessagesInOrder() async throws {
        let delegate = RecordingDelegate()
        let server = try makeServer(delegate)
        let client = try await connectClient(server, name: "ordered")
        #expect(try await eventually { delegate.connection(named: "ordered") != nil })
        let connection = try #require(delegate.connection(named: "ordered"))
        let results = try await blocking { () -> [WebSocketSendResult] in
            (0..<1_000).map { connection.send("message \($0)") }
        }
        #expect(results.allSatisfy { $0 == .queued })
        let received = try await blocking { () -> [RawWebSocketClient.Message] in
            try (0..<1_000).map { _ in try client.readMessage() }
        }
        #expect(received == (0..<1_000).map { .text("message \($0)") })
        await server.shutdown()
    }

    @Test("two connections each receive only their own messages")
    func connectionsAreIndependent() async throws {
        let delegate = RecordingDelegate()
        let server = try makeServer(delegate)
        let alice = try await connectClient(server, name: "alice")
        let bob = try await connectClient(server, name: "bob")
        #expect(try await eventually { delegate.opened.count == 2 })
        let toAlice = try #require(delegate.connection(named: "alice"))
        let toBob = try #require(delegate.connection(named: "bob"))
        #expect(toAlice != toBob)
        for index in 0..<20 {
            #expect(toAlice.send("alice \(index)") == .queued)
            #expect(toBob.send("bob \(index)") == .queued)
        }
        let (aliceGot, bobGot) = try await blocking {
            (try (0..<20).map { _ in try alice.readMessage() }, try (0..<20).map { _ in try bob.readMessage() })
        }
        #expect(aliceGot == (0..<20).map { .text("alice \($0)") })
        #expect(bobGot == (0..<20).map { .text("bob \($0)") })
        try await blocking { try alice.sendText("from alice") }
        #expect(try await eventually { delegate.events.withLock { $0.received[toAlice.id] } == ["from alice"] })
        #expect(delegate.events.withLock { $0.received[toBob.id] } == nil)
        await server.shutdown()
    }

    @Test("an inbound message over the limit closes the connection with 1009")
    func oversizedMessageIsRefused() async throws {
        let delegate = RecordingDelegate(echo: true)
        let server = try makeServer(delegate) { $0.maxMessageBytes = 1_024 }
        let client = try await connectClient(server, name: "big")
        let reply = try await blocking { () -> RawWebSocketClient.Message in
            try client.sendText(String(repeating: "y", count: 2_000), fragments: 2)
            let reply = try client.readMessage()
            try client.sendClose(code: 1009)
            return reply
        }
        #expect(reply == .close(code: 1009, reason: "message too large"))
        #expect(try await eventually { delegate.closed.count == 1 })
        #expect(delegate.events.withLock { $0.received.isEmpty })
        await server.shutdown()
    }
}
