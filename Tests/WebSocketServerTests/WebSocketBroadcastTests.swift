import Foundation
import Testing
@testable import WebSocketServer

@Suite("Shared frames, batched wakes and event loops", .serialized, .timeLimit(.minutes(2)))
struct WebSocketBroadcastTests {
    static let loops: [WebSocketServerConfiguration.EventLoop] = [.automatic, .poll]

    @Test("one frame queued on many connections through a batch reaches every one, in order", arguments: loops)
    func sharedFramesInOrder(loop: WebSocketServerConfiguration.EventLoop) async throws {
        let delegate = RecordingDelegate()
        let server = try makeServer(delegate) { $0.eventLoop = loop }
        var clients: [RawWebSocketClient] = []
        for index in 0..<12 { clients.append(try await connectClient(server, name: "c\(index)")) }
        #expect(try await eventually { delegate.opened.count == 12 })
        let connections = (0..<12).compactMap { delegate.connection(named: "c\($0)") }
        #expect(connections.count == 12)

        let results = try await blocking { () -> [WebSocketSendResult] in
            var results: [WebSocketSendResult] = []
            var batch = WebSocketSendBatch()
            for message in 0..<200 {
                let frame = WebSocketFrame(text: "event \(message) " + String(repeating: "é", count: message * 7))
                for connection in connections { results.append(connection.send(frame, batch: &batch)) }
                // Wake every few events, as a hub does per delivery.
                if message % 7 == 6 { batch.flush() }
            }
            batch.flush()
            return results
        }
        #expect(results.allSatisfy { $0 == .queued })
        let expected = (0..<200).map { RawWebSocketClient.Message.text("event \($0) " + String(repeating: "é", count: $0 * 7)) }
        for client in clients {
            let received = try await blocking { try (0..<200).map { _ in try client.readMessage() } }
            #expect(received == expected)
        }
        await server.shutdown()
    }

    @Test("a batch that is never flushed still wakes the service thread when it goes away", arguments: loops)
    func droppedBatchWakes(loop: WebSocketServerConfiguration.EventLoop) async throws {
        let delegate = RecordingDelegate()
        let server = try makeServer(delegate) { $0.eventLoop = loop }
        let client = try await connectClient(server, name: "late")
        #expect(try await eventually { delegate.connection(named: "late") != nil })
        let connection = try #require(delegate.connection(named: "late"))
        let pending = try await blocking { () -> Int in
            var batch = WebSocketSendBatch()
            _ = connection.send(WebSocketFrame(text: "first"), batch: &batch)
            _ = connection.send(WebSocketFrame(utf8: Array("second".utf8)), batch: &batch)
            return batch.pendingWakes  // one: the connection was idle once
        }
        #expect(pending == 1)
        let received = try await blocking { try (0..<2).map { _ in try client.readMessage() } }
        #expect(received == [.text("first"), .text("second")])
        await server.shutdown()
    }

    @Test("the configured event loop is the one in use; automatic is epoll or poll")
    func eventLoopInUse() async throws {
        let delegate = RecordingDelegate()
        let polling = try makeServer(delegate) { $0.eventLoop = .poll }
        #expect(polling.eventLoop == "poll")
        await polling.shutdown()
        let automatic = try makeServer(delegate)
        #expect(automatic.eventLoop == "epoll" || automatic.eventLoop == "poll")
        await automatic.shutdown()
    }

    @Test("a shared frame counts against each connection's own bounds", arguments: loops)
    func sharedFramesRespectBounds(loop: WebSocketServerConfiguration.EventLoop) async throws {
        let delegate = RecordingDelegate()
        let server = try makeServer(delegate) {
            $0.eventLoop = loop
            $0.maxQueuedBytes = 64 * 1024
        }
        let client = try await connectClient(server, name: "bounded")
        #expect(try await eventually { delegate.connection(named: "bounded") != nil })
        let connection = try #require(delegate.connection(named: "bounded"))
        let big = WebSocketFrame(text: String(repeating: "b", count: 64 * 1024 + 1))
        #expect(big.count == 64 * 1024 + 1)
        #expect(connection.send(big) == .overflow)
        #expect(connection.queuedMessages == 0)
        #expect(connection.send(WebSocketFrame(text: "small")) == .queued)
        #expect(try await blocking { try client.readMessage() } == .text("small"))
        await server.shutdown()
        #expect(connection.send(WebSocketFrame(text: "after")) == .closed)
    }
}
