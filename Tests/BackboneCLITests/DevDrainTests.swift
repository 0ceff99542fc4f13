import Auth
@testable import BackboneCLI
import BackboneTestSupport
import Foundation
import Postgres
import ServiceLogging
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
        // Nor any accepted event to publish again (a notification an outbox relayed after the
        // drain may come back once: the relays stop with the consumers, after the last prune).
        #expect(!again.log.contains("reading.events.v2="), "nor any accepted event to publish again")
        #expect(await again.interrupt() == 0)
    }

    @Test("kill -9 while the app is posting: started again in the same folder, the stack gives the new broker what the killed run had not processed, and every event answered accepted reaches both logs without the app sending anything again; a resend is a duplicate")
    func killedWhilePosting() async throws {
        let (dev, arguments, app, _) = try await postAndStop(with: SIGKILL)
        defer { dev.cleanUp() }
        let unprocessed = try await Self.journaledRecords(dev)
        try #require(unprocessed > 0, "the kill came after every accepted record was processed; nothing to check")

        let again = try await DevStack.start(arguments, home: dev.home)
        defer { again.cleanUp() }
        #expect(again.log.contains("its journal gave them to the new broker"), "\(again.log.suffix(3000))")
        #expect(!again.log.contains("events.lost"), "nothing accepted was lost: \(again.log.suffix(3000))")
        var logs: [String: Set<String>] = [:]
        #expect(await Integration.eventually(timeout: .seconds(30)) {
            logs = (try? await Self.eventLogs(again)) ?? [:]
            return !logs.isEmpty && logs.values.allSatisfy { app.accepted.isSubset(of: $0) }
        }, "every accepted event is in both logs: \(logs.mapValues { app.accepted.subtracting($0).count }) missing")
        for (table, logged) in logs { #expect(logged.isSubset(of: app.sent.keys), "\(table) holds only events the app sent") }

        // The app resends a batch whose answer it missed: every event of it is a duplicate.
        let resent = try await App(again, registerMaterial: false)
        let sample = Array(app.accepted.prefix(50))
        var answers: [String: String] = [:]
        for (user, events) in Dictionary(grouping: sample, by: { app.sent[$0]!.user }) {
            for _ in 0..<10 {  // a 429 answers nothing: the app waits and sends again
                let answered = try await resent.post(events.map { app.sent[$0]!.json }, user: user)
                if !answered.isEmpty { answers.merge(answered) { $1 }; break }
                try await Task.sleep(for: .milliseconds(300))
            }
        }
        #expect(sample.allSatisfy { answers[$0] == "duplicate" }, "\(Dictionary(grouping: sample) { answers[$0] ?? "none" }.mapValues(\.count))")
        // Once processed, the copies are dropped.
        #expect(await Integration.eventually(timeout: .seconds(15)) { (try? await Self.journaledRecords(again)) == 0 })
        #expect(await again.interrupt() == 0)
    }

    /// How many records the journal holds (of the topics the stack consumes).
    static func journaledRecords(_ dev: DevStack) async throws -> Int {
        let database = PostgresClient(configuration: PostgresConfiguration(url: try #require(dev.value("DATABASE_URL")), maxConnections: 1),
                                      logger: .disabled)
        let count: Int
        do {
            let rows = try await database.query("SELECT count(*)::bigint AS n FROM dev_broker_journal WHERE topic NOT LIKE '%.dlq'")
            count = try rows.first?.decode(Int.self, "n") ?? 0
        } catch {
            await database.close()
            throw error
        }
        await database.close()
        return count
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
