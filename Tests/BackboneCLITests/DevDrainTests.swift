import Auth
@testable import BackboneCLI
import BackboneTestSupport
import Foundation
import Logging
import Postgres
import Synchronization
import Testing

/// `backbone dev`'s embedded broker forgets every record when the process exits: stopping the
/// stack must not take accepted events with it.
@Suite("backbone dev stops without losing what it accepted", .serialized, .timeLimit(.minutes(4)),
       .enabled(if: Integration.isEnabled))
struct DevDrainTests {
    @Test("Ctrl-C while the app is posting events: every event answered accepted is in the progress and analytics logs when dev is started again in the same folder")
    func ctrlCWhilePosting() async throws {
        try await stopWhilePosting(signal: SIGINT)
    }

    @Test("the terminal closed (SIGHUP) while the app is posting events: the same")
    func hangUpWhilePosting() async throws {
        try await stopWhilePosting(signal: SIGHUP)
    }

    /// Starts a stack, lets the app post until 1,000 events are accepted, then sends `signal`;
    /// returns the stopped stack, its arguments, the app and the exit status.
    func postAndStop(with signal: Int32) async throws -> (dev: DevStack, arguments: [String], app: App, status: Int32?) {
        let arguments = ["--port-offset", String(Integration.freePortOffset(for: DevStack.ports))]
        let dev = try await DevStack.start(arguments)
        let app: App
        do { app = try await App(dev) } catch {
            dev.cleanUp()
            throw error
        }
        let posting = Task { await app.postUntilRefused() }
        #expect(await Integration.eventually(timeout: .seconds(60)) { app.accepted.count >= 1_000 })
        kill(dev.process.processIdentifier, signal)
        let status = await dev.exited.wait(timeout: .seconds(40))
        await posting.value
        return (dev, arguments, app, status)
    }

    func stopWhilePosting(signal: Int32) async throws {
        let (dev, arguments, app, status) = try await postAndStop(with: signal)
        defer { dev.cleanUp() }
        #expect(status == 0, "dev exit \(String(describing: status))\n\(dev.log.suffix(4000))")

        let again = try await DevStack.start(arguments, home: dev.home)
        defer { again.cleanUp() }
        let logs = try await Self.eventLogs(again)
        for (table, logged) in logs.sorted(by: { $0.key < $1.key }) {
            let missing = app.accepted.subtracting(logged).count
            let unsent = logged.subtracting(app.sent.keys).count
            #expect(missing == 0, "\(table): \(missing) of \(app.accepted.count) accepted events missing")
            #expect(unsent == 0, "\(table) holds only events the app sent")
        }
        #expect(!again.log.contains("stopped without processing"), "a drained stop leaves nothing to forget")
        #expect(await again.interrupt() == 0)
    }

    @Test("kill -9 while the app is posting: what the killed run had not processed is gone with its broker, but started again the stack says how many and accepts the app's resends of them, which then reach both logs; a resend of a processed event stays a duplicate")
    func killedWhilePosting() async throws {
        let (dev, arguments, app, _) = try await postAndStop(with: SIGKILL)
        defer { dev.cleanUp() }

        let again = try await DevStack.start(arguments, home: dev.home)
        defer { again.cleanUp() }
        let before = try await Self.eventLogs(again)
        let lost = app.accepted.subtracting(before["progress_event_log"]!.intersection(before["analytics_events"]!))
        try #require(!lost.isEmpty, "the kill came after every accepted event was processed; nothing to check")
        #expect(again.log.contains("stopped without processing events it had accepted"), "\(again.log.suffix(3000))")
        #expect(again.log.contains("\"events.lost\":\"\(lost.count)\""), "\(again.log.suffix(3000))")

        // The app resends what it never saw processed (here: all of it), and one processed event.
        let resent = try await App(again, registerMaterial: false)
        let processed = app.accepted.subtracting(lost).first
        var answers: [String: String] = [:]
        let ids = Array(lost) + (processed.map { [$0] } ?? [])
        for chunk in stride(from: 0, to: ids.count, by: 50) {
            let batch = ids[chunk..<min(ids.count, chunk + 50)]
            let grouped = Dictionary(grouping: batch) { app.sent[$0]!.user }
            for (user, events) in grouped {
                for _ in 0..<10 {  // a 429 answers nothing: the app waits and sends again
                    let answered = try await resent.post(events.map { app.sent[$0]!.json }, user: user)
                    if !answered.isEmpty { answers.merge(answered) { $1 }; break }
                    try await Task.sleep(for: .milliseconds(300))
                }
            }
        }
        #expect(lost.allSatisfy { answers[$0] == "accepted" }, "\(Dictionary(grouping: lost) { answers[$0] ?? "none" }.mapValues(\.count))")
        if let processed { #expect(answers[processed] == "duplicate") }
        #expect(await Integration.eventually(timeout: .seconds(30)) {
            let logs = (try? await Self.eventLogs(again)) ?? [:]
            return logs.values.allSatisfy { app.accepted.isSubset(of: $0) } && !logs.isEmpty
        }, "every accepted event is in both logs after the resends")
        #expect(await again.interrupt() == 0)
    }

    static func eventLogs(_ dev: DevStack) async throws -> [String: Set<String>] {
        let database = PostgresClient(configuration: PostgresConfiguration(url: try #require(dev.value("DATABASE_URL")), maxConnections: 2),
                                      logger: .disabled)
        var logs: [String: Set<String>] = [:]
        do {
            for table in ["progress_event_log", "analytics_events"] {
                let rows = try await database.query("SELECT event_id FROM \(table) WHERE user_id LIKE 'drain-%'")
                logs[table] = Set(try rows.map { try $0.decode(String.self, "event_id") })
            }
        } catch {
            await database.close()
            throw error
        }
        await database.close()
        return logs
    }

    /// The app: batches of 50 fresh events for four users in turn.
    final class App: Sendable {
        struct Event: Sendable {
            let user: Int
            let json: String
        }

        let ingest: String
        let tokens: [String]
        let http = DemoHTTPClient()
        private let state = Mutex<(sent: [String: Event], accepted: Set<String>)>(([:], []))

        var sent: [String: Event] { state.withLock { $0.sent } }
        var accepted: Set<String> { state.withLock { $0.accepted } }

        init(_ dev: DevStack, registerMaterial: Bool = true) async throws {
            let codec = JWTCodec(secret: try #require(dev.value("JWT_SECRET")))
            ingest = try #require(dev.value("INGEST_URL"))
            tokens = (0..<4).map { codec.issue(userID: "drain-\($0)", ttl: 3600) }
            guard registerMaterial else { return }
            let material = try await http.send("PUT", service: "ingest", base: ingest, path: "/materials/drain-lesson",
                                               token: codec.issue(userID: "catalog", ttl: 3600, role: "service"),
                                               body: Data(#"{"readingTargetType":"knowledgeSource","knowledgeBaseId":"kb-1"}"#.utf8))
            #expect(material.status == 200, "\(material.text)")
        }

        /// Posts fresh batches until ingest stops answering (or 2,000 batches).
        func postUntilRefused() async {
            let timestamp = ISO8601DateFormatter()
            timestamp.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            for round in 0..<2_000 {
                let ids = (0..<50).map { _ in UUID().uuidString.lowercased() }
                let now = timestamp.string(from: Date())
                let events = ids.enumerated().map { index, id in
                    #"{"eventId":"\#(id)","clientSessionId":"drain-session-\#(round % 4)","readingTargetType":"knowledgeSource","#
                        + #""materialId":"drain-lesson","eventType":"heartbeat","position":{"page":1,"totalPages":10},"#
                        + #""activeSecondsDelta":1,"clientTimestamp":"\#(now)","clientTimezoneOffsetMinutes":0,"#
                        + #""sequence":\#(round * 50 + index),"platform":"ios","appVersion":"1.0"}"#
                }
                state.withLock { state in
                    for (id, json) in zip(ids, events) { state.sent[id] = Event(user: round % 4, json: json) }
                }
                guard let answers = try? await post(events, user: round % 4) else { return }  // ingest stopped taking requests
                state.withLock { $0.accepted.formUnion(answers.filter { $0.value == "accepted" }.keys) }
            }
        }

        /// Posts one batch; the status of each event by id (empty on a 429).
        func post(_ events: [String], user: Int) async throws -> [String: String] {
            let response = try await http.send("POST", service: "ingest", base: ingest, path: "/learning/reading-events/batch",
                                               token: tokens[user], body: Data(#"{"events":[\#(events.joined(separator: ","))]}"#.utf8))
            guard response.status == 200,
                  let body = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any],
                  let results = body["results"] as? [[String: Any]] else { return [:] }
            var answers: [String: String] = [:]
            for result in results {
                if let id = result["eventId"] as? String, let status = result["status"] as? String { answers[id] = status }
            }
            return answers
        }
    }
}
