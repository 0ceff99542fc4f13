import Foundation
import Testing
@testable import WebSocketServer

@Suite("Queued messages of one socket written together", .serialized, .timeLimit(.minutes(2)))
struct WebSocketCoalescingTests {
    /// Sizes around every header-length boundary (7-bit, 16-bit, 64-bit lengths), an empty
    /// message, and one larger than a whole coalesced write, among small ones.
    static let sizes = [5, 0, 125, 126, 127, 300, 65_535, 65_536, 40, 70_000, 16 * 1024 - 4, 16 * 1024, 1, 200_000, 90, 125]

    static func message(_ index: Int, size: Int) -> String {
        let tag = "#\(index):"
        guard size > tag.utf8.count else { return String(tag.prefix(size)) }
        let filler = Character(UnicodeScalar(UInt8(97 + index % 26)))
        return tag + String(repeating: filler, count: size - tag.utf8.count)
    }

    @Test("messages queued together on one socket arrive complete and in order, whether written one by one or together, through a small receive buffer",
          arguments: [0, 16 * 1024])
    func queuedMessagesArriveInOrder(coalescedWriteBytes: Int) async throws {
        let delegate = RecordingDelegate()
        let server = try makeServer(delegate) { $0.coalescedWriteBytes = coalescedWriteBytes }
        // A small kernel buffer on the reader: writes are taken in part, and frames are split
        // across the reads the client makes.
        let client = try await connectClient(server, name: "reader", receiveBuffer: 4096)
        #expect(try await eventually { delegate.opened.count == 1 })
        let connection = try #require(delegate.connection(named: "reader"))

        // Three rounds of 200 messages each, all queued before the service thread is woken,
        // so the socket has them waiting together.
        var expected: [String] = []
        for round in 0..<3 {
            var batch = WebSocketSendBatch()
            for index in 0..<200 {
                let number = round * 200 + index
                let text = Self.message(number, size: index < Self.sizes.count ? Self.sizes[index] : 20 + number % 180)
                expected.append(text)
                #expect(connection.send(WebSocketFrame(text: text), batch: &batch) == .queued)
            }
            batch.flush()
        }
        let count = expected.count
        let received = try await blocking { try (0..<count).map { _ in try client.readMessage() } }
        #expect(received.count == expected.count)
        #expect(received == expected.map { .text($0) })

        let (messages, writes) = server.writeCounts
        #expect(messages == expected.count)
        if coalescedWriteBytes == 0 {
            #expect(writes == messages)
        } else {
            // Several messages a write: far fewer writes than messages.
            #expect(writes * 4 < messages)
        }

        // The socket still works both ways after the burst.
        #expect(connection.send("after") == .queued)
        #expect(try await blocking { try client.readMessage() } == .text("after"))
        await server.shutdown()
    }

    @Test("a reader that stops reading small messages overflows its own queue, the fast reader keeps receiving, and the slow one later gets every queued message, the final text and the close")
    func slowReaderOfSmallMessages() async throws {
        let (server, delegate, slow, fast, toSlow, toFast) = try await slowAndFastReaders(maxMessages: 512)

        // Small messages in bursts until the queue stops draining, then until it overflows.
        var sent: [String] = []
        var overflowed = false
        for burst in 0..<2_000 where !overflowed {
            for index in 0..<64 {
                let text = "slow \(burst)-\(index) " + String(repeating: "x", count: 150)
                switch toSlow.send(text) {
                case .queued: sent.append(text)
                case .overflow: overflowed = true
                case .closed: Issue.record("slow connection closed early")
                }
                if overflowed { break }
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(overflowed)
        try await expectSlowReaderContained(toSlow, maxMessages: 512, fast: toFast, reader: fast, batch: 50)
        let count = sent.count
        let (messages, final, close) = try await blocking { () -> ([RawWebSocketClient.Message], RawWebSocketClient.Message, RawWebSocketClient.Message) in
            let messages = try (0..<count).map { _ in try slow.readMessage() }
            let final = try slow.readMessage()
            let close = try slow.readMessage()
            try? slow.sendClose(code: 4000)
            return (messages, final, close)
        }
        #expect(messages == sent.map { .text($0) })
        #expect(final == .text("{\"event\":\"system\",\"status\":\"error\"}"))
        #expect(close == .close(code: 4000, reason: "slow consumer"))
        #expect(try await eventually { delegate.closed.contains(toSlow.id) })
        #expect(!delegate.closed.contains(toFast.id))
        await server.shutdown()
    }
}
