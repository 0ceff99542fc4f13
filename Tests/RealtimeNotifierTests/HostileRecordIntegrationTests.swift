import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import JSON
import Kafka
import Testing

@Suite("Hostile records on the notifier's topics", .serialized, .timeLimit(.minutes(5)), .enabled(if: Integration.isEnabled))
struct HostileRecordIntegrationTests {
    static let status = #"{"schemaVersion":1,"roomId":"r1","versionId":"v1","ownerUserId":"u1","status":"queued","at":"2026-01-01T00:00:00Z"}"#
    static let progress = #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"in_progress","progressPercent":10,"totalActiveSeconds":5}"#
    static let broadcast = #"{"schemaVersion":1,"channel":"room:r1","event":"comment","payload":{"text":"hi"}}"#

    @Test("every poison record lands in <topic>.dlq with its origin and is counted in projection_dead_letters_total (the live consumer's too), the notifier keeps running, and a good record after them is delivered")
    func poisonEverywhere() async throws {
        let harness = try await RealtimeHarness()
        var produced: [String: Set<Int64>] = [:]
        let poison: [(String, [[UInt8]])] = [
            (Topics.roomTranscodeStatus, HostileRecords.shapeless() + (try HostileRecords.absurdField("roomId", in: Self.status))
                + (try HostileRecords.absurdField("ownerUserId", in: Self.status))),
            (Topics.readingProgress, HostileRecords.shapeless() + (try HostileRecords.absurdField("userId", in: Self.progress))),
            (Topics.realtimeBroadcasts, HostileRecords.shapeless() + (try HostileRecords.absurdField("channel", in: Self.broadcast))
                + (try HostileRecords.absurdField("payload", in: Self.broadcast).filter { !String(decoding: $0, as: UTF8.self).contains(#""payload":{"#) })),
            // The internal topic every instance reads in full (the live consumer, not the sequencer).
            (Topics.realtimeSequenced, HostileRecords.shapeless()),
        ]
        for (topic, values) in poison {
            for value in values {
                let report = try await harness.producer.send(KafkaProducerRecord(topic: topic, partition: 0, key: Array("k".utf8), value: value))
                produced[topic, default: []].insert(report.offset)
            }
        }
        // Good records behind the poison, on each topic.
        try await harness.broadcast("room:after", "comment", ["text": .string("still here")])
        _ = try await harness.producer.send(KafkaProducerRecord(topic: Topics.roomTranscodeStatus, partition: 0, key: Array("r2".utf8),
                                                                value: Array(Self.status.replacingOccurrences(of: "\"r1\"", with: "\"r2\"").utf8)))
        try await harness.waitForSequence("room:after", atLeast: 1)
        try await harness.waitForSequence("room:r2", atLeast: 1)

        for (topic, offsets) in produced {
            let letters = try await TopicReader.read(Topics.deadLetter(for: topic), bootstrapServers: harness.cluster.bootstrapServers,
                                                     count: offsets.count, timeout: .seconds(60))
            let decoded = try letters.map { try ContractCoding.decode(DeadLetterRecord.self, from: $0.value) }
            #expect(Set(decoded.map(\.offset)) == offsets, "\(topic): every poison offset is dead-lettered")
            #expect(decoded.allSatisfy { $0.originalTopic == topic && $0.partition == 0 && !$0.error.isEmpty })
        }
        // Each group counts what it set aside, so the DeadLettersReceived alert fires for the live consumer too.
        func deadLettersCounted() async throws -> [String: Int] {
            let text = String(decoding: try await harness.get("/metrics", token: nil).1, as: UTF8.self)
            var counted: [String: Int] = [:]
            for line in text.split(separator: "\n") where line.hasPrefix("projection_dead_letters_total{group=\"") {
                let group = line.dropFirst("projection_dead_letters_total{group=\"".count).prefix { $0 != "\"" }
                counted[String(group)] = line.split(separator: " ").last.flatMap { Double($0) }.map { Int($0) }
            }
            return counted
        }
        let live = produced[Topics.realtimeSequenced]?.count ?? 0
        let sequenced = produced.filter { $0.key != Topics.realtimeSequenced }.values.map(\.count).reduce(0, +)
        var counted: [String: Int] = [:]
        _ = try await Integration.eventually {
            counted = try await deadLettersCounted()
            return counted.values.reduce(0, +) == live + sequenced
        }
        #expect(counted.filter { $0.key.hasPrefix("realtime-live-") }.map(\.value) == [live], "\(counted)")
        #expect(counted.filter { !$0.key.hasPrefix("realtime-live-") }.values.reduce(0, +) == sequenced, "\(counted)")
        #expect(try await harness.get("/readyz", token: nil).0 == 200)
        await harness.shutdown()
    }
}
