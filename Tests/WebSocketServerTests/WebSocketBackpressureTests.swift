import Foundation
import HTTPRouting
import ServiceLogging
import Synchronization
import Testing
@testable import WebSocketServer

@Suite("Slow consumers, shutdown and dead peers", .serialized, .timeLimit(.minutes(2)))
struct WebSocketBackpressureTests {
    @Test("a reader that stops reading overflows its own queue while a fast reader keeps receiving; close(after:) still delivers the final text")
    func slowReaderOverflowsAlone() async throws {
        let (server, delegate, slow, fast, toSlow, toFast) = try await slowAndFastReaders(maxMessages: 32)

        // While the kernel still takes data the queue drains; once the reader's buffers are full
        // it stops draining, and only then does the queue fill up to its bound.
        let chunk = String(repeating: "s", count: 16 * 1024)
        var sentToSlow = 0
        var choked = false
        while !choked && sentToSlow < 5_000 {
            #expect(toSlow.send(chunk) == .queued)
            sentToSlow += 1
            choked = try await !eventually(0.3) { toSlow.queuedMessages == 0 }
        }
        #expect(choked)
        #expect(sentToSlow > 1)
        var overflowed = false
        for _ in 0..<100 {
            switch toSlow.send(chunk) {
            case .queued: sentToSlow += 1
            case .overflow: overflowed = true
            case .closed: Issue.record("slow connection closed early")
            }
            if overflowed { break }
        }
        #expect(overflowed)
        // The fast reader is unaffected: batches keep arriving while the slow one is stuck.
        try await expectSlowReaderContained(toSlow, maxMessages: 32, fast: toFast, reader: fast, batch: 20)

        // Now the slow client drains everything: all queued chunks, then the final text, then the close.
        let (chunks, final, close) = try await blocking { () -> (Int, RawWebSocketClient.Message, RawWebSocketClient.Message) in
            var chunks = 0
            while true {
                let message = try slow.readMessage()
                if message == .text(chunk) { chunks += 1; continue }
                let close = try slow.readMessage()
                try? slow.sendClose(code: 4000)
                return (chunks, message, close)
            }
        }
        #expect(chunks == sentToSlow)
        #expect(final == .text("{\"event\":\"system\",\"status\":\"error\"}"))
        #expect(close == .close(code: 4000, reason: "slow consumer"))
        #expect(try await eventually { delegate.closed.contains(toSlow.id) })
        #expect(!delegate.closed.contains(toFast.id))
        await server.shutdown()
    }

    @Test("shutdown closes every client with 1001 going away, and later sends report closed")
    func shutdownSendsGoingAway() async throws {
        let delegate = RecordingDelegate()
        let server = try makeServer(delegate)
        let first = try await connectClient(server, name: "one")
        let second = try await connectClient(server, name: "two")
        #expect(try await eventually { delegate.opened.count == 2 })
        let readers = [first, second].map { client in
            Task { try await blocking { () -> RawWebSocketClient.Message in
                let message = try client.readMessage()
                try? client.sendClose(code: 1001)
                return message
            } }
        }
        await server.shutdown()
        for reader in readers {
            let message = try await reader.value
            guard case .close(let code, _) = message else {
                Issue.record("expected a close frame, got \(message)")
                continue
            }
            #expect(code == 1001)
        }
        #expect(delegate.closed.count == 2)
        #expect(delegate.opened.allSatisfy { $0.send("late") == .closed })
        // The port is released: a new connection is refused.
        #expect(throws: (any Error).self) { try RawWebSocketClient(port: server.port).handshake(target: "/realtime/v1/websocket") }
    }

    @Test("run() serves until its task is cancelled, then closes clients with 1001")
    func runStopsOnCancellation() async throws {
        let delegate = RecordingDelegate(echo: true)
        var configuration = WebSocketServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.shutdownGracePeriod = 1
        let server = WebSocketServer(configuration: configuration, delegate: delegate, httpRouter: nil, logger: .disabled)
        let running = Task { try await server.run() }
        #expect(try await eventually { server.port != 0 })
        let client = try await connectClient(server, name: "run")
        let echoed = try await blocking { () -> RawWebSocketClient.Message in
            try client.sendText("still here")
            return try client.readMessage()
        }
        #expect(echoed == .text("still here"))
        running.cancel()
        let closing = try await blocking { try client.readMessage() }
        #expect(closing == .close(code: 1001, reason: "server shutting down"))
        try await running.value
        #expect(delegate.closed.count == 1)
    }

    @Test("a peer that never answers pings is dropped after the idle timeout")
    func deadPeerIsDropped() async throws {
        let delegate = RecordingDelegate()
        let server = try makeServer(delegate) {
            $0.pingInterval = 1
            $0.idleTimeout = 2
        }
        let silent = try await connectClient(server, name: "silent")
        silent.answersPings = false
        let lively = try await connectClient(server, name: "lively")
        #expect(try await eventually { delegate.opened.count == 2 })
        let pinged = try await blocking { try silent.readMessage() }
        #expect(pinged == .ping)
        // The lively client answers pings from a background reader and must survive.
        let livelyReader = Task {
            while (try? await blocking { try lively.readMessage() }) != nil {}
        }
        #expect(try await eventually(8) { delegate.closed.contains(delegate.connection(named: "silent")!.id) })
        #expect(!delegate.closed.contains(delegate.connection(named: "lively")!.id))
        await server.shutdown()
        _ = await livelyReader.value
    }
}
