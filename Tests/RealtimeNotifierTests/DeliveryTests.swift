import BackboneTestSupport
import Contracts
import Foundation
import JSON
import Testing
@testable import RealtimeNotifier

/// A v1 broadcast frame's event name, sequence and replay mark.
struct Pushed: Sendable, Equatable {
    var event: String
    var seq: Int64
    var replayed: Bool
}

func pushed(_ value: Any) throws -> Pushed? {
    let frame = try #require(value as? [String: Any])
    guard frame["event"] as? String == "broadcast", let payload = frame["payload"] as? [String: Any],
          let meta = payload["meta"] as? [String: Any], let id = (meta["id"] as? String).flatMap({ Int64($0) }) else { return nil }
    return Pushed(event: payload["event"] as? String ?? "", seq: id, replayed: meta["replayed"] as? Bool ?? false)
}

func joinV1(_ socket: RawSocket, _ channel: String, ref: String, replay: [String: Any]? = nil) async throws -> [String: Any] {
    var config: [String: Any] = [:]
    if let replay { config["broadcast"] = ["replay": replay] }
    try await socket.send(json: ["topic": "realtime:\(channel)", "event": "phx_join", "payload": ["config": config],
                                 "ref": ref, "join_ref": ref])
    let frame = try #require(try await socket.frame() as? [String: Any])
    #expect(frame["event"] as? String == "phx_reply")
    return try #require(frame["payload"] as? [String: Any])
}

/// Reads `count` broadcasts (failing on anything else but system messages, which are returned too).
struct SystemNote: Sendable, Equatable {
    var status: String
    var message: String
}

func broadcasts(_ socket: RawSocket, count: Int, timeout: Double = 45) async throws -> (events: [Pushed], system: [SystemNote]) {
    var events: [Pushed] = []
    var system: [SystemNote] = []
    while events.count < count {
        let frame = try await socket.frame(timeout: timeout)
        if let event = try pushed(frame) {
            events.append(event)
        } else if let object = frame as? [String: Any], object["event"] as? String == "system" {
            let payload = object["payload"] as? [String: Any] ?? [:]
            system.append(SystemNote(status: payload["status"] as? String ?? "", message: payload["message"] as? String ?? ""))
        }
    }
    return (events, system)
}

@Suite("Nothing lost: replay, catch-up, scale-out, slow consumers", .serialized, .timeLimit(.minutes(5)),
       .enabled(if: Integration.isEnabled))
struct DeliveryTests {
    @Test("a client that rejoins with the last id it saw gets exactly the 50 events it missed, in order, then live ones; the HTTP catch-up serves the same")
    func replayAfterReconnect() async throws {
        try await RealtimeHarness.with { harness in
            let channel = "user:reader"
            let first = try await RawSocket(url: harness.socketURL(user: "reader"))
            #expect(try await joinV1(first, channel, ref: "1")["status"] as? String == "ok")
            try await harness.waitForSubscriptions(1)
            for i in 1...3 { try await harness.broadcast(channel, "progress_updated", ["i": .number(Double(i))]) }
            let seen = try await broadcasts(first, count: 3)
            #expect(seen.events.map(\.seq) == [1, 2, 3] && seen.events.allSatisfy { !$0.replayed })
            first.close()
            try await harness.waitForSubscriptions(0)

            for i in 4...53 { try await harness.broadcast(channel, "comment_new", ["i": .number(Double(i))]) }
            try await harness.waitForSequence(channel, atLeast: 53)

            let second = try await RawSocket(url: harness.socketURL(user: "reader"))
            defer { second.close() }
            #expect(try await joinV1(second, channel, ref: "1", replay: ["afterId": "3"])["status"] as? String == "ok")
            let replayed = try await broadcasts(second, count: 50)
            #expect(replayed.events.map(\.seq) == Array(4...53))
            #expect(replayed.events.allSatisfy { $0.replayed })
            #expect(replayed.system.isEmpty)
            for i in 54...58 { try await harness.broadcast(channel, "comment_new", ["i": .number(Double(i))]) }
            let live = try await broadcasts(second, count: 5)
            #expect(live.events.map(\.seq) == Array(54...58) && live.events.allSatisfy { !$0.replayed })
            if case .frame(let extra) = try await second.receive(timeout: 1) { Issue.record("unexpected frame \(extra)") }

            let (status, body) = try await harness.get("/realtime/v1/channels/\(channel)/events?after=3&limit=50", token: harness.token("reader"))
            #expect(status == 200)
            let page = try ContractCoding.decode(ChannelEventsResponse.self, from: Array(body))
            #expect(page.events.map(\.seq) == Array(4...53) && !page.truncated && page.latestSeq == 58)
        }
    }

    @Test("a replay since a time (epoch ms) returns what came after it; a history that no longer reaches back says so")
    func replaySinceAndTruncation() async throws {
        try await RealtimeHarness.with(configure: { $0.historyMaxEvents = 10 }) { harness in
            let channel = "user:t"
            for i in 1...5 { try await harness.broadcast(channel, "e", ["i": .number(Double(i))]) }
            try await harness.waitForSequence(channel, atLeast: 5)
            try await Task.sleep(for: .milliseconds(50))
            let since = Int64(Date().timeIntervalSince1970 * 1000)
            try await Task.sleep(for: .milliseconds(50))
            for i in 6...8 { try await harness.broadcast(channel, "e", ["i": .number(Double(i))]) }
            try await harness.waitForSequence(channel, atLeast: 8)
            let socket = try await RawSocket(url: harness.socketURL(user: "t"))
            #expect(try await joinV1(socket, channel, ref: "1", replay: ["since": since])["status"] as? String == "ok")
            let recent = try await broadcasts(socket, count: 3)
            #expect(recent.events.map(\.seq) == [6, 7, 8] && recent.system.isEmpty)
            socket.close()

            for i in 9...30 { try await harness.broadcast(channel, "e", ["i": .number(Double(i))]) }
            try await harness.waitForSequence(channel, atLeast: 30)
            // Rows are trimmed once published; give the publisher a moment, then one more event trims.
            try await Task.sleep(for: .milliseconds(300))
            try await harness.broadcast(channel, "e", ["i": .number(31)])
            try await harness.waitForSequence(channel, atLeast: 31)
            let late = try await RawSocket(url: harness.socketURL(user: "t"))
            defer { late.close() }
            #expect(try await joinV1(late, channel, ref: "1", replay: ["afterId": "2"])["status"] as? String == "ok")
            let rest = try await broadcasts(late, count: 10)
            #expect(rest.system.first?.status == "error")
            #expect(rest.system.first?.message.contains("history no longer reaches back") == true)
            #expect(rest.events.map(\.seq) == Array(22...31))
            let (_, body) = try await harness.get("/realtime/v1/channels/\(channel)/events?after=2", token: harness.token("t"))
            let page = try ContractCoding.decode(ChannelEventsResponse.self, from: Array(body))
            #expect(page.truncated && page.oldestSeq == 22)
        }
    }

    @Test("with two notifier instances, a client on each receives every event of its channels")
    func twoInstances() async throws {
        try await RealtimeHarness.with(instances: 2) { harness in
            let a = try await RawSocket(url: harness.socketURL(0, user: "shared"))
            let b = try await RawSocket(url: harness.socketURL(1, user: "shared"))
            defer { a.close(); b.close() }
            #expect(try await joinV1(a, "user:shared", ref: "1")["status"] as? String == "ok")
            #expect(try await joinV1(b, "user:shared", ref: "1")["status"] as? String == "ok")
            try await harness.waitForSubscriptions(1, instance: 0)
            try await harness.waitForSubscriptions(1, instance: 1)
            for i in 1...40 { try await harness.broadcast("user:shared", "e", ["i": .number(Double(i))]) }
            let onA = try await broadcasts(a, count: 40)
            let onB = try await broadcasts(b, count: 40)
            #expect(onA.events.map(\.seq) == Array(1...40))
            #expect(onB.events.map(\.seq) == Array(1...40))
        }
    }

    @Test("a slow reader is cut off with a system error while a fast reader on the same channel keeps receiving")
    func slowReader() async throws {
        try await RealtimeHarness.with(configure: {
            $0.maxQueuedMessages = 512
            $0.maxQueuedBytes = 2 << 20
        }) { harness in
            let fast = try await RawSocket(url: harness.socketURL(user: "busy"))
            let slow = try await RawSocket(url: harness.socketURL(user: "busy"), maxQueue: 1, receiveBuffer: 4096)
            defer { fast.close(); slow.close() }
            #expect(try await joinV1(fast, "user:busy", ref: "1")["status"] as? String == "ok")
            #expect(try await joinV1(slow, "user:busy", ref: "1")["status"] as? String == "ok")
            try await harness.waitForSubscriptions(2)
            // 1,500 × 4 KB: more than the slow reader's socket buffers and queue (2 MB) hold;
            // paced in bursts that a reader keeping up absorbs.
            let blob = JSONValue.string(String(repeating: "x", count: 4_000))
            let total = 1_500
            let reader = Task { try await broadcasts(fast, count: total, timeout: 60) }
            for i in 1...total {
                try await harness.broadcast("user:busy", "big", ["i": .number(Double(i)), "blob": blob])
                if i % 8 == 0 { try await Task.sleep(for: .milliseconds(5)) }
            }
            let received = try await reader.value
            #expect(received.events.map(\.seq) == (1...total).map(Int64.init))
            #expect(received.system.isEmpty)
            // The slow reader: whatever it had, then a system error, then the close.
            let (sawSystemError, closeCode) = try await slow.untilClosed(timeout: 10)
            #expect(sawSystemError)
            #expect(closeCode == 1013)
        }
    }
}

@Suite("Client broadcasts", .serialized, .timeLimit(.minutes(3)), .enabled(if: Integration.isEnabled))
struct ClientBroadcastTests {
    @Test("a client broadcast is acknowledged when asked, reaches the other sockets, and comes back to the sender only with self")
    func clientBroadcasts() async throws {
        try await RealtimeHarness.with { harness in
            let sender = try await RawSocket(url: harness.socketURL(user: "w"))
            let mirror = try await RawSocket(url: harness.socketURL(user: "w"))
            let other = try await RawSocket(url: harness.socketURL(user: "w"))
            defer { sender.close(); mirror.close(); other.close() }
            try await sender.send(json: ["topic": "realtime:user:w", "event": "phx_join", "ref": "1", "join_ref": "1",
                                         "payload": ["config": ["broadcast": ["self": false, "ack": true]]]])
            _ = try await sender.frame()
            try await mirror.send(json: ["topic": "realtime:user:w", "event": "phx_join", "ref": "1", "join_ref": "1",
                                         "payload": ["config": ["broadcast": ["self": "true"]]]])
            _ = try await mirror.frame()
            #expect(try await joinV1(other, "user:w", ref: "1")["status"] as? String == "ok")
            try await harness.waitForSubscriptions(3)

            try await sender.send(json: ["topic": "realtime:user:w", "event": "broadcast", "ref": "2", "join_ref": "1",
                                         "payload": ["type": "broadcast", "event": "comment_new", "payload": ["text": "hello"]]])
            let ack = try #require(try await sender.frame() as? [String: Any])
            #expect(ack["event"] as? String == "phx_reply" && ack["ref"] as? String == "2")
            #expect(try await broadcasts(other, count: 1).events == [Pushed(event: "comment_new", seq: 1, replayed: false)])
            // The mirror socket also joined with self: true, but it is not the sender: it gets it like anyone.
            #expect(try await broadcasts(mirror, count: 1).events.map(\.seq) == [1])
            if case .frame(let frame) = try await sender.receive(timeout: 1) {
                Issue.record("the sender got its own broadcast without self: \(frame)")
            }

            // A sender that joined with self: true gets its own broadcast back.
            try await mirror.send(json: ["topic": "realtime:user:w", "event": "broadcast", "ref": "3", "join_ref": "1",
                                         "payload": ["type": "broadcast", "event": "remix_created", "payload": [String: Any]()]])
            #expect(try await broadcasts(mirror, count: 1).events == [Pushed(event: "remix_created", seq: 2, replayed: false)])
            #expect(try await broadcasts(other, count: 1).events.map(\.seq) == [2])

            // Joining someone else's channel is refused.
            #expect(try await joinV1(other, "user:w2", ref: "3")["status"] as? String == "error")
        }
    }
}
