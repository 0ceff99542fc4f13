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

    func stopWhilePosting(signal: Int32) async throws {
        let arguments = ["--port-offset", String(Integration.freePortOffset(for: DevStack.ports))]
        let dev = try await DevStack.start(arguments)
        defer { dev.cleanUp() }
        let codec = JWTCodec(secret: try #require(dev.value("JWT_SECRET")))
        let ingest = try #require(dev.value("INGEST_URL"))
        let http = DemoHTTPClient()
        let material = try await http.send("PUT", service: "ingest", base: ingest, path: "/materials/drain-lesson",
                                           token: codec.issue(userID: "catalog", ttl: 3600, role: "service"),
                                           body: Data(#"{"readingTargetType":"knowledgeSource","knowledgeBaseId":"kb-1"}"#.utf8))
        #expect(material.status == 200, "\(material.text)")

        // The app: batches of 50 fresh events for four users in turn, until ingest stops answering.
        let sent = Mutex<Set<String>>([])
        let accepted = Mutex<Set<String>>([])
        let tokens = (0..<4).map { codec.issue(userID: "drain-\($0)", ttl: 3600) }
        let posting = Task {
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
                sent.withLock { $0.formUnion(ids) }
                guard let response = try? await http.send("POST", service: "ingest", base: ingest, path: "/learning/reading-events/batch",
                                                          token: tokens[round % 4],
                                                          body: Data(#"{"events":[\#(events.joined(separator: ","))]}"#.utf8))
                else { return }  // ingest stopped taking requests
                guard response.status == 200,
                      let body = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any],
                      let results = body["results"] as? [[String: Any]] else { continue }  // 429: the next user's turn
                let ok = results.filter { $0["status"] as? String == "accepted" }.compactMap { $0["eventId"] as? String }
                accepted.withLock { $0.formUnion(ok) }
            }
        }
        #expect(await Integration.eventually(timeout: .seconds(60)) { accepted.withLock { $0.count } >= 1_000 })
        kill(dev.process.processIdentifier, signal)
        let status = await dev.exited.wait(timeout: .seconds(40))
        await posting.value
        #expect(status == 0, "dev exit \(String(describing: status))\n\(dev.log.suffix(4000))")

        let again = try await DevStack.start(arguments, home: dev.home)
        defer { again.cleanUp() }
        let database = PostgresClient(configuration: PostgresConfiguration(url: try #require(again.value("DATABASE_URL")), maxConnections: 2),
                                      logger: .disabled)
        var logs: [String: Set<String>] = [:]
        for table in ["progress_event_log", "analytics_events"] {
            let rows = try await database.query("SELECT event_id FROM \(table) WHERE user_id LIKE 'drain-%'")
            logs[table] = Set(try rows.map { try $0.decode(String.self, "event_id") })
        }
        await database.close()
        let acceptedIDs = accepted.withLock { $0 }
        let sentIDs = sent.withLock { $0 }
        for (table, logged) in logs.sorted(by: { $0.key < $1.key }) {
            let missing = acceptedIDs.subtracting(logged).count
            let unsent = logged.subtracting(sentIDs).count
            #expect(missing == 0, "\(table): \(missing) of \(acceptedIDs.count) accepted events missing")
            #expect(unsent == 0, "\(table) holds only events the app sent")
        }
        #expect(await again.interrupt() == 0)
    }
}
