import BackboneTestSupport
import Contracts
import Foundation
import JSON
import Postgres
import Testing
@testable import RealtimeNotifier

@Suite("Outbox and idle sockets", .serialized, .timeLimit(.minutes(3)), .enabled(if: Integration.isEnabled))
struct MaintenanceTests {
    @Test("an event committed but never published (a crash after commit) is re-published and reaches the subscribers")
    func outboxRepublishes() async throws {
        try await RealtimeHarness.with { harness in
            let socket = try await RawSocket(url: harness.socketURL(user: "o"))
            defer { socket.close() }
            #expect(try await joinV1(socket, "user:o", ref: "1")["status"] as? String == "ok")
            try await harness.waitForSubscriptions(1)
            // What the sequencer commits, without its after-commit publish.
            _ = try await harness.database.execute("INSERT INTO realtime_channels (channel, last_seq) VALUES ('user:o', 1)")
            _ = try await harness.database.execute("""
                INSERT INTO realtime_history (channel, seq, event, payload, created_at, source_topic, source_partition, source_offset)
                VALUES ('user:o', 1, 'ready', '{"k":"v"}', now() - interval '10 seconds', 'test', 0, 0)
                """)
            let delivered = try await broadcasts(socket, count: 1)
            #expect(delivered.events == [Pushed(event: "ready", seq: 1, replayed: false)])
            // The socket may get it from its own catch-up before the outbox marks it published.
            var published = false
            for _ in 0..<100 where !published {
                let rows = try await harness.database.query("SELECT published FROM realtime_history WHERE channel = 'user:o'")
                published = try rows.first?.decode(Bool.self, "published") == true
                if !published { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(published, "the outbox re-published the row")
        }
    }

    @Test("a room status delivered twice is numbered once on the room's and the owner's channel, also when the repeat comes after newer ones; the same stage reported again later is new")
    func repeatedStatusNumberedOnce() async throws {
        try await RealtimeHarness.with { harness in
            let at = Date(timeIntervalSince1970: 1_790_000_000)
            func status(_ status: RoomVersionStatus, version: String = "v1", stage: String? = nil, at: Date) -> RoomTranscodeStatus {
                RoomTranscodeStatus(roomId: "repeat-room", versionId: version, ownerUserId: "repeat-owner", status: status,
                                    stage: stage, manifestKey: status == .ready ? "rooms/repeat-room/\(version)/manifest.json" : nil, at: at)
            }
            let parsing = status(.transcoding, stage: "parsing", at: at)
            let parsingRetried = status(.transcoding, stage: "parsing", at: at + 5)
            let ready = status(.ready, at: at + 9)
            // In one partition (keyed by room), so in this order: the outbox's repeats, in a batch
            // and after newer statuses, then a status of another version as the end marker.
            for record in [parsing, parsing, parsingRetried, ready, ready, parsing, ready, status(.ready, version: "v2", at: at + 20)] {
                try await harness.transcodeStatus(record)
            }
            try await harness.waitForSequence("room:repeat-room", atLeast: 4)
            try await harness.waitForSequence("user:repeat-owner", atLeast: 4)
            try await Task.sleep(for: .milliseconds(500))
            for channel in ["room:repeat-room", "user:repeat-owner"] {
                let rows = try await harness.database.query("""
                    SELECT event, payload->>'stage' AS stage, payload->>'version_id' AS version FROM realtime_history
                    WHERE channel = $1 ORDER BY seq
                    """, [channel])
                let events = try rows.map { "\(try $0.decode(String.self, "event")) \(try $0.decode(String?.self, "stage") ?? "-") \(try $0.decode(String.self, "version"))" }
                #expect(events == ["transcode_progress parsing v1", "transcode_progress parsing v1", "ready - v1", "ready - v2"], "\(channel)")
            }
        }
    }

    @Test("events older than the history age are trimmed; a replay since before them is told the history no longer reaches back")
    func ageTrimming() async throws {
        try await RealtimeHarness.with(configure: { $0.historyMaxAge = .seconds(1) }) { harness in
            let since = Int64(Date().timeIntervalSince1970 * 1000) - 1_000
            for i in 1...3 { try await harness.broadcast("user:aged", "e", ["i": .number(Double(i))]) }
            try await harness.waitForSequence("user:aged", atLeast: 3)
            let deadline = ContinuousClock.now + .seconds(45)
            while try await harness.database.query("SELECT 1 FROM realtime_history WHERE channel = 'user:aged'").count > 0 {
                guard ContinuousClock.now < deadline else { throw PythonClient.Failure(description: "history never trimmed") }
                try await Task.sleep(for: .milliseconds(200))
            }
            let socket = try await RawSocket(url: harness.socketURL(user: "aged"))
            defer { socket.close() }
            #expect(try await joinV1(socket, "user:aged", ref: "1", replay: ["since": since])["status"] as? String == "ok")
            let frame = try #require(try await socket.frame() as? [String: Any])
            #expect(frame["event"] as? String == "system")
            #expect(((frame["payload"] as? [String: Any])?["message"] as? String)?.contains("history no longer reaches back") == true)
            try await harness.broadcast("user:aged", "e", ["i": .number(4)])
            #expect(try await broadcasts(socket, count: 1).events == [Pushed(event: "e", seq: 4, replayed: false)])
        }
    }

    @Test("a socket that sends no heartbeat within the idle timeout gets a system error and is closed")
    func idleSocketsClose() async throws {
        try await RealtimeHarness.with(configure: { $0.idleTimeout = .seconds(2) }) { harness in
            let socket = try await RawSocket(url: harness.socketURL(user: "idle"))
            defer { socket.close() }
            let frame = try #require(try await socket.frame(timeout: 8) as? [String: Any])
            #expect(frame["event"] as? String == "system")
            #expect((frame["payload"] as? [String: Any])?["message"] as? String == "idle timeout: no heartbeat")
            guard case .closed = try await socket.receive(timeout: 5) else {
                Issue.record("the idle socket was not closed")
                return
            }
        }
    }
}
