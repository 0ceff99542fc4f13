import AnalyticsAggregator
@testable import BackboneCLI
import BackboneTestSupport
import Contracts
import Foundation
import Ingest
import JSON
import Kafka
import Postgres
import ProgressProjector
import ServiceLogging
import Testing

/// One reading-event record, one rule: the boundary records ingest, the progress projector and
/// the analytics aggregator are each given, and the verdicts they come to.
@Suite("The reading event's one rule, in every stage")
struct ReadingEventRuleTests {
    static let now = Date(timeIntervalSince1970: 1_796_000_000)

    /// A valid event with `change` applied.
    static func item(_ change: (inout ReadingEventUploadItem) -> Void = { _ in }) -> ReadingEventUploadItem {
        var item = ReadingEventUploadItem(
            eventId: UUID().uuidString, clientSessionId: "s-1", readingTargetType: .knowledgeSource, materialId: "lesson-1",
            knowledgeBaseId: "kb-1", eventType: .heartbeat, position: .page(3, of: 12), activeSecondsDelta: 15,
            clientTimestamp: now, clientTimezoneOffsetMinutes: 480, sequence: 1, platform: "iOS", appVersion: "2.3.0")
        change(&item)
        return item
    }

    /// The boundary cases, each with the code every stage must agree on (nil: accepted).
    static let cases: [(name: String, item: ReadingEventUploadItem, code: ErrorCode?)] = [
        ("a delta of 0 s", item { $0.activeSecondsDelta = 0 }, nil),
        ("a delta of 3,600 s", item { $0.activeSecondsDelta = 3600 }, nil),
        ("a delta of 3,601 s", item { $0.activeSecondsDelta = 3601 }, .invalidActiveSeconds),
        ("a delta of 5,000 s", item { $0.activeSecondsDelta = 5000 }, .invalidActiveSeconds),
        ("a negative delta", item { $0.activeSecondsDelta = -1 }, .invalidActiveSeconds),
        ("UTC−12:00", item { $0.clientTimezoneOffsetMinutes = -720 }, nil),
        ("UTC+14:00", item { $0.clientTimezoneOffsetMinutes = 840 }, nil),
        ("UTC+05:45 (Nepal)", item { $0.clientTimezoneOffsetMinutes = 345 }, nil),
        ("UTC+14:01", item { $0.clientTimezoneOffsetMinutes = 841 }, .invalidTimezone),
        ("UTC−12:01", item { $0.clientTimezoneOffsetMinutes = -721 }, .invalidTimezone),
        ("an empty session", item { $0.clientSessionId = "" }, .invalidField),
        ("a session with a control character", item { $0.clientSessionId = "s\u{7}1" }, .invalidField),
        ("a 256-byte session", item { $0.clientSessionId = String(repeating: "s", count: 256) }, nil),
        ("a 257-byte session", item { $0.clientSessionId = String(repeating: "s", count: 257) }, .invalidField),
        ("an event id that is no UUID", item { $0.eventId = "event-1" }, .invalidEventID),
        ("an empty material", item { $0.materialId = "" }, .invalidField),
        ("a page past the last", item { $0.position = .page(13, of: 12) }, .invalidPosition),
        ("positionChanged without a position", item { $0.eventType = .positionChanged; $0.position = nil }, .invalidPosition),
        ("a negative sequence", item { $0.sequence = -1 }, .invalidField),
        ("a 65-byte platform", item { $0.platform = String(repeating: "p", count: 65) }, .invalidField),
    ]

    /// Ingest's verdict: the item as the app uploads it, through the batch validator.
    static func ingestVerdict(_ item: ReadingEventUploadItem) throws -> ErrorCode? {
        let json = try ContractCoding.decoder.decode(JSONValue.self, from: Data(try ContractCoding.encode(item)))
        switch ReadingEventValidator().validate(json, now: now) {
        case .success: return nil
        case .failure(let rejection): return rejection.code
        }
    }

    /// A projector's verdict: the record on `reading.events.v2`, through its decode (a throw is a dead letter).
    static func decodes(_ decode: (KafkaConsumerRecord) throws -> ReadingEventRecord, _ item: ReadingEventUploadItem) throws -> Bool {
        let value = try ContractCoding.encode(ReadingEventRecord(userId: "user-1", receivedAt: now, item: item))
        let record = KafkaConsumerRecord(topic: Topics.readingEvents, partition: 0, offset: 1, key: nil, value: value, timestamp: nil, headers: [])
        do { _ = try decode(record); return true } catch { return false }
    }

    @Test("ingest, the progress projector and the analytics aggregator give every boundary record the same verdict")
    func sameVerdicts() async throws {
        let database = PostgresClient(configuration: PostgresConfiguration(url: "postgres://nobody@127.0.0.1:1/none"), logger: .disabled)
        let progress = ReadingProgressProjection(producer: NoRecordSender(), database: database)
        let analytics = AnalyticsProjection()
        for (name, item, code) in Self.cases {
            #expect(try Self.ingestVerdict(item) == code, "ingest: \(name)")
            #expect(try Self.decodes(progress.decode, item) == (code == nil), "progress: \(name)")
            #expect(try Self.decodes(analytics.decode, item) == (code == nil), "analytics: \(name)")
            if let code {
                #expect(throws: ContractViolation.self, "the rule: \(name)") { try item.validate() }
                #expect((try? item.validate()) == nil)
                do { try item.validate() } catch { #expect(error.code == code, "the rule's code: \(name)") }
            }
        }
        await database.close()
    }
}

/// A sender that is never called: decode sends nothing.
private struct NoRecordSender: KafkaRecordSender {
    func send(_ records: [KafkaProducerRecord]) async -> [Result<KafkaDeliveryReport, KafkaError>] { [] }
    func shutdown() async {}
}

/// The same records replayed onto the topic (as a republish or an older producer would put
/// them there), projected by the real services: both read models count what the rule accepts
/// and nothing else, so they agree.
@Suite("A replayed boundary record ends in the same place in both read models", .serialized, .timeLimit(.minutes(3)),
       .enabled(if: Integration.isEnabled))
struct ReadingEventRuleReplayTests {
    @Test("3,600 s is counted by progress and analytics alike; 3,601 s and 5,000 s by neither")
    func replayAgrees() async throws {
        try await RebuildCommandTests.withStack(partitions: 1) { stack in
            let deltas = [3600, 3601, 5000, 20]
            let records = deltas.enumerated().map { i, delta in
                ReadingEventRecord(userId: "replayer", receivedAt: ReadingEventRuleTests.now, item: ReadingEventRuleTests.item {
                    $0.activeSecondsDelta = delta
                    $0.sequence = i
                    $0.clientTimestamp = ReadingEventRuleTests.now.addingTimeInterval(Double(i))
                })
            }
            try await stack.produce(records)
            #expect(try await stack.caughtUp(), "the services did not consume every record")
            let progressSeconds = try await stack.client.query(
                "SELECT coalesce(sum(total_active_seconds), 0)::bigint AS n FROM reading_progress WHERE user_id = 'replayer'"
            ).first?.decode(Int64.self, "n")
            let analyticsSeconds = try await stack.client.query(
                "SELECT coalesce(sum(active_seconds), 0)::bigint AS n FROM analytics_daily WHERE user_id = 'replayer'"
            ).first?.decode(Int64.self, "n")
            #expect(progressSeconds == 3620)
            #expect(analyticsSeconds == 3620)
        }
    }
}
