import BackboneTestSupport
import Foundation
import Kafka
import Postgres
import Projection
import Testing

@Suite("backbone dlq: dead letters listed, shown and replayed once after the fix", .serialized, .timeLimit(.minutes(3)),
       .enabled(if: Integration.isEnabled))
struct DeadLetterCommandTests {
    static func seconds(_ live: LiveProjector, user: String) async throws -> Int64 {
        try await live.client.query("SELECT COALESCE(SUM(total_active_seconds), 0)::bigint AS n FROM reading_progress WHERE user_id LIKE $1",
                                    [user + "-%"]).first?.decode(Int64.self, "n") ?? 0
    }

    @Test("poison records land in the DLQ in their trace; replay after the cause is fixed projects them once, in the same trace; a second replay replays nothing")
    func replayOnce() async throws {
        let live = try await LiveProjector("dlqreplay")
        // The cause: a database rule that rejects one user's events (as a bad constraint would).
        try await live.client.withConnection { connection in
            try await connection.runScript("""
                CREATE FUNCTION reject_poison() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN IF NEW.user_id LIKE 'poison-%' THEN RAISE EXCEPTION 'poison user rejected'; END IF; RETURN NEW; END $$;
                CREATE TRIGGER reject_poison BEFORE INSERT ON progress_event_log FOR EACH ROW EXECUTE FUNCTION reject_poison();
                """)
        }
        let task = live.start()
        let good = LiveProjector.events(user: "good", count: 20, seconds: 2, seed: 7)
        let poison = LiveProjector.events(user: "poison", count: 4, seconds: 5, seed: 8)
        let traceID = "0af7651916cd43dd8448eb211c80319c"
        let traceparent = "00-\(traceID)-b7ad6b7169203331-01"
        try await live.produce(good)
        try await live.produce(poison, headers: [KafkaHeader(key: "traceparent", value: Array(traceparent.utf8))])
        #expect(try await Integration.eventually {
            let letters = try await live.highWatermarks(live.topic + ".dlq")
            guard letters == 4 else { return false }
            return try await live.caughtUp()
        },
                "the poison records went to the dead-letter topic")
        #expect(try await Self.seconds(live, user: "good") == 40)
        #expect(try await Self.seconds(live, user: "poison") == 0)

        let list = try await live.cli(["dlq", "list"])
        #expect(list.status == 0, "\(list.stderr)")
        let groups = try LiveProjector.json(list.lines)
        #expect(groups.count == 1)
        #expect(groups.first?["dlq"] as? String == live.topic + ".dlq")
        #expect(groups.first?["count"] as? Int == 4)
        #expect(groups.first?["replayed"] as? Int == 0)
        #expect((groups.first?["error"] as? String)?.contains("apply failed") == true, "\(groups)")
        #expect(groups.first?["oldest"] is String && groups.first?["newest"] is String)

        let show = try await live.cli(["dlq", "show", live.topic + ".dlq", "--where", "APPLY FAILED"])
        #expect(show.status == 0, "\(show.stderr)")
        let letters = try LiveProjector.json(show.lines)
        #expect(letters.count == 4)
        for letter in letters {
            let origin = try #require(letter["origin"] as? [String: Any])
            #expect(origin["topic"] as? String == live.topic)
            #expect((letter["key"] as? String)?.hasPrefix("poison-") == true)
            #expect((letter["value"] as? [String: Any])?["userId"] is String, "the original value is shown as JSON: \(letter)")
        }
        // The dead letters keep the original's trace: `dump --trace` finds them beside the originals.
        let traced = try LiveProjector.json(try await live.cli(["dump", live.topic, live.topic + ".dlq", "--trace", traceID]).lines)
        #expect(traced.filter { $0["topic"] as? String == live.topic + ".dlq" }.count == 4, "\(traced)")
        #expect(traced.filter { $0["topic"] as? String == live.topic }.count == 4, "\(traced)")
        #expect(traced.allSatisfy { $0["traceparent"] as? String == traceparent })

        // The fix; then the replay.
        _ = try await live.client.execute("DROP TRIGGER reject_poison ON progress_event_log")
        let before = try await live.highWatermarks()
        let replay = try await live.cli(["dlq", "replay", live.topic + ".dlq", "--where", "apply failed"])
        #expect(replay.status == 0, "\(replay.stderr)")
        let summary = try #require(try LiveProjector.json(replay.lines).first)
        #expect(summary["replayed"] as? Int == 4, "\(summary)")
        #expect(try await live.highWatermarks() == before + 4, "the original records went back to their topic")
        let replayedCopies = try LiveProjector.json(try await live.cli(["dump", live.topic, "--trace", traceID]).lines)
        #expect(replayedCopies.count == 8, "the originals and their replayed copies, in the trace: \(replayedCopies)")
        #expect(try await Integration.eventually {
            let seconds = try await Self.seconds(live, user: "poison")
            guard seconds == 20 else { return false }
            return try await live.caughtUp()
        })

        let again = try await live.cli(["dlq", "replay", live.topic + ".dlq"])
        #expect(again.status == 0, "\(again.stderr)")
        let second = try #require(try LiveProjector.json(again.lines).first)
        #expect(second["replayed"] as? Int == 0 && second["alreadyReplayed"] as? Int == 4, "\(second)")
        #expect(try await live.highWatermarks() == before + 4, "a second replay sends nothing")
        #expect(try await Self.seconds(live, user: "poison") == 20, "projected once")
        let listed = try LiveProjector.json(try await live.cli(["dlq", "list", live.topic]).lines)
        #expect(listed.first?["replayed"] as? Int == 4)

        let missing = try await live.cli(["dlq", "show", "no.such.topic.dlq"])
        #expect(missing.status == 1 && missing.stderr.contains(live.topic + ".dlq"), "the error names the dead-letter topics: \(missing.stderr)")
        task.cancel()
        _ = await task.result
        await live.close()
    }

    @Test("a record two groups dead-lettered goes back to its topic once; each dead letter is recorded as replayed")
    func replayOncePerRecord() async throws {
        let live = try await LiveProjector("dlqshared")
        func original(offset: Int64, _ value: String) -> KafkaConsumerRecord {
            KafkaConsumerRecord(topic: live.topic, partition: 1, offset: offset, key: Array("u1".utf8), value: Array(value.utf8),
                                timestamp: nil, headers: [])
        }
        let shared = original(offset: 41, #"{"eventId":"shared"}"#)
        let letters = try [("progress-projector", shared), ("analytics-aggregator", shared),
                           ("analytics-aggregator", original(offset: 42, #"{"eventId":"own"}"#))].map { group, record in
            try KafkaProducerRecord.deadLetter(of: record, group: group, error: "apply failed: boom")
        }
        for result in await live.producer.send(letters) { _ = try result.get() }
        let before = try await live.highWatermarks()

        let replay = try await live.cli(["dlq", "replay", live.topic + ".dlq"])
        #expect(replay.status == 0, "\(replay.stderr)")
        let summary = try #require(try LiveProjector.json(replay.lines).first)
        #expect(summary["replayed"] as? Int == 3 && summary["records"] as? Int == 2, "\(summary)")
        #expect(try await live.highWatermarks() == before + 2, "the shared record went back once")
        let again = try #require(try LiveProjector.json(try await live.cli(["dlq", "replay", live.topic + ".dlq"]).lines).first)
        #expect(again["replayed"] as? Int == 0 && again["alreadyReplayed"] as? Int == 3, "\(again)")
        await live.close()
    }
}
