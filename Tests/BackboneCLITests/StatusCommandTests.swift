import BackboneTestSupport
import Foundation
import Kafka
import Postgres
import Projection
import Testing

/// `backbone status --json` against an embedded broker and a real database, without the
/// services (their lines are down; these tests read the others).
@Suite("backbone status: dead letters since the last replay, and PostgreSQL unreachable", .serialized, .timeLimit(.minutes(3)),
       .enabled(if: Integration.isEnabled))
struct StatusCommandTests {
    /// Service URLs at a closed port: each readiness look fails at once.
    static func environment(_ live: LiveProjector, databaseURL: String? = nil) -> [String: String] {
        let nowhere = "http://127.0.0.1:\(Integration.freePort())"
        var environment = live.environment
        if let databaseURL { environment["DATABASE_URL"] = databaseURL }
        for key in ["INGEST_URL", "PROGRESS_URL", "ANALYTICS_URL", "TRANSCODE_URL", "REALTIME_URL"] { environment[key] = nowhere }
        return environment
    }

    static func status(_ environment: [String: String]) async throws -> (outcome: CLIProcess.Outcome, document: [String: Any]) {
        let outcome = try await CLIProcess.run(["status", "--json"], environment: environment)
        let document = try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any]
        return (outcome, try #require(document, "not a JSON document: \(outcome.stdout) \(outcome.stderr)"))
    }

    /// The dead-letter topic's line of `live`'s DLQ.
    static func deadLetterLine(_ live: LiveProjector) async throws -> [String: Any] {
        let document = try await status(environment(live)).document
        let queues = try #require(document["deadLetterQueues"] as? [[String: Any]], "\(document)")
        return try #require(queues.first { $0["topic"] as? String == live.topic + ".dlq" }, "\(queues)")
    }

    @Test("a DLQ's count since the last replay counts its dead letters (a replay recorded against another cluster aside), resets to 0 after `backbone dlq replay`, and counts the next one")
    func sinceLastReplayResets() async throws {
        let live = try await LiveProjector("statusdlq")
        func letters(_ offsets: ClosedRange<Int64>) throws -> [KafkaProducerRecord] {
            try offsets.map { offset in
                let original = KafkaConsumerRecord(topic: live.topic, partition: 0, offset: offset, key: Array("u\(offset)".utf8),
                                                   value: Array(#"{"eventId":"e\#(offset)"}"#.utf8), timestamp: nil, headers: [])
                return try KafkaProducerRecord.deadLetter(of: original, group: live.group, error: "apply failed: boom")
            }
        }
        for result in await live.producer.send(try letters(1...3)) { _ = try result.get() }
        // A replay recorded against an earlier broker (another cluster id) far past these offsets:
        // not this cluster's, so it does not hide them.
        for partition in 0..<live.partitions {
            _ = try await live.client.execute("""
                INSERT INTO dead_letter_replays (cluster_id, dlq_topic, dlq_partition, dlq_offset, original_topic, original_partition,
                                                 original_offset, error)
                VALUES ('an-earlier-cluster', $1, $2, 1000, $3, 0, 1, 'apply failed: boom')
                """, [live.topic + ".dlq", Int(partition), live.topic])
        }

        let before = try await Self.deadLetterLine(live)
        #expect(before["records"] as? Int == 3 && before["sinceLastReplay"] as? Int == 3, "\(before)")
        #expect(before["state"] as? String == "degraded" && before["lastReplayAt"] == nil, "\(before)")
        #expect((before["reason"] as? String)?.contains("received 3 dead letter(s) since the last replay") == true, "\(before)")

        let replay = try await live.cli(["dlq", "replay", live.topic + ".dlq"])
        #expect(replay.status == 0, "\(replay.stderr)")
        let after = try await Self.deadLetterLine(live)
        #expect(after["records"] as? Int == 3 && after["sinceLastReplay"] as? Int == 0, "\(after)")
        #expect(after["state"] as? String == "healthy" && after["reason"] == nil && after["lastReplayAt"] is String, "\(after)")

        for result in await live.producer.send(try letters(4...4)) { _ = try result.get() }
        let next = try await Self.deadLetterLine(live)
        #expect(next["records"] as? Int == 4 && next["sinceLastReplay"] as? Int == 1 && next["state"] as? String == "degraded", "\(next)")
        await live.close()
    }

    @Test("PostgreSQL unreachable: status is down (exit 2) with the reason on PostgreSQL's line")
    func databaseUnreachable() async throws {
        let live = try await LiveProjector("statusnopg")
        let closed = "postgres://postgres@127.0.0.1:\(Integration.freePort())/postgres"
        let (outcome, document) = try await Self.status(Self.environment(live, databaseURL: closed))
        #expect(outcome.status == 2, "\(outcome.stdout)")
        #expect(document["status"] as? String == "down")
        let postgres = try #require(document["postgres"] as? [String: Any])
        #expect(postgres["state"] as? String == "down")
        #expect((postgres["reason"] as? String)?.hasPrefix("PostgreSQL cannot be read: ") == true, "\(postgres)")
        #expect((document["reasons"] as? [String])?.contains { $0.hasPrefix("down: PostgreSQL cannot be read") } == true, "\(document)")
        #expect((document["kafka"] as? [String: Any])?["state"] as? String == "healthy", "Kafka is read all the same")
        await live.close()
    }
}
