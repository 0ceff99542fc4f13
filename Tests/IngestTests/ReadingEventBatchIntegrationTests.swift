import Auth
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import Ingest
import JSON
import Kafka
import ServiceRuntime
import Testing

@Suite("POST /learning/reading-events/batch against Postgres and the embedded Kafka cluster", .serialized,
       .enabled(if: Integration.isEnabled), .timeLimit(.minutes(3)))
struct ReadingEventBatchIntegrationTests {
    static func withHarness(configuration: IngestConfiguration = IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000),
                            _ body: (IngestHarness) async throws -> Void) async throws {
        try await IngestHarness.with(configuration: configuration) { harness in
            _ = try await harness.putMaterial("lesson-shared", MaterialUpsertRequest(readingTargetType: .knowledgeSource, knowledgeBaseId: "kb-physics-101"))
            try await body(harness)
        }
    }

    @Test("accepted events reach Kafka keyed by the token's user with the validated event, userId and receivedAt")
    func acceptedReachKafka() async throws {
        try await Self.withHarness { harness in
            let ids = [UUID().uuidString, UUID().uuidString]
            let events = [sampleEvent(id: ids[0], type: "opened"),
                          sampleEvent(id: ids[1], ["userId": .string("someone-else"),
                                                   "clientTimestamp": .number((Date().timeIntervalSince1970 - 30) * 1000)])]
            let response = try await harness.postBatch(user: "user-a", events: events)
            #expect(response.status == .ok)
            let body = try response.decoded(ReadingEventBatchResponse.self)
            #expect(body.results.map(\.status) == [.accepted, .accepted])
            #expect(body.results.map(\.eventId) == ids)

            let records = try harness.readTopic("reading.events.v2", expecting: 2)
            #expect(records.count == 2)
            for (record, id) in zip(records.sorted { $0.value < $1.value }, ids.sorted()) {
                _ = id
                #expect(record.key == "user-a")
                let value = try ContractCoding.decoder.decode(ReadingEventRecord.self, from: Data(record.value.utf8))
                #expect(value.userId == "user-a")
                #expect(value.schemaVersion == 1)
                #expect(ids.contains(value.eventId))
                #expect(abs(value.receivedAt.timeIntervalSinceNow) < 60)
                #expect(value.materialId == "lesson-shared")
            }
        }
    }

    @Test("a resent batch is answered duplicate and nothing new reaches Kafka")
    func duplicateAcrossBatches() async throws {
        try await Self.withHarness { harness in
            let events = (0..<3).map { _ in sampleEvent() }
            let first = try await harness.postBatch(user: "user-b", events: events).decoded(ReadingEventBatchResponse.self)
            #expect(first.accepted == 3)
            let again = try await harness.postBatch(user: "user-b", events: events + [sampleEvent()])
                .decoded(ReadingEventBatchResponse.self)
            #expect(again.results.map(\.status) == [.duplicate, .duplicate, .duplicate, .accepted])
            #expect(again.results.prefix(3).allSatisfy { $0.code == .duplicateEvent })
            let records = try harness.readTopic("reading.events.v2", expecting: 5)
            #expect(records.count == 4)
        }
    }

    @Test("every rejection code comes back per event, in order, next to accepted events")
    func rejectionCodes() async throws {
        try await Self.withHarness { harness in
            _ = try await harness.putMaterial("mine", MaterialUpsertRequest(readingTargetType: .knowledgeSource, ownerUserId: "user-c"))
            _ = try await harness.putMaterial("theirs", MaterialUpsertRequest(readingTargetType: .knowledgeSource, ownerUserId: "user-x"))
            _ = try await harness.putMaterial("gone", MaterialUpsertRequest(readingTargetType: .knowledgeSource))
            _ = await harness.request(.delete, "/materials/gone", token: harness.serviceToken, body: [])
            _ = try await harness.putMaterial("tmp", MaterialUpsertRequest(readingTargetType: .temporaryFile, ownerUserId: "user-c",
                                                                            expiresAt: Date().addingTimeInterval(-60)))
            let dup = UUID().uuidString
            let cases: [(JSONValue, String?)] = [
                (sampleEvent(material: "mine"), nil),
                (sampleEvent(["eventId": .string("nope")]), "INVALID_EVENT_ID"),
                (sampleEvent(["eventType": .string("scrolled")]), "INVALID_EVENT_TYPE"),
                (sampleEvent(["position": .object(["progress": .number(2)])]), "INVALID_POSITION"),
                (sampleEvent(timestamp: .string(ContractCoding.formatTimestamp(Date().addingTimeInterval(3600)))), "INVALID_TIMESTAMP"),
                (sampleEvent(["activeSecondsDelta": .number(-5)]), "INVALID_ACTIVE_SECONDS"),
                (sampleEvent(["clientTimezoneOffsetMinutes": .number(2000)]), "INVALID_TIMEZONE"),
                (sampleEvent(["platform": .null]), "INVALID_FIELD"),
                (sampleEvent(material: "theirs"), "MATERIAL_ACCESS_DENIED"),
                (sampleEvent(material: "never-heard-of"), "MATERIAL_ACCESS_DENIED"),
                (sampleEvent(material: "tmp", target: "temporaryFile"), "TEMPORARY_MATERIAL_EXPIRED"),
                (sampleEvent(material: "gone"), "SOURCE_DELETED"),
                (sampleEvent(id: dup), nil),
                (sampleEvent(id: dup), "DUPLICATE_EVENT"),
            ]
            let response = try await harness.postBatch(user: "user-c", events: cases.map(\.0))
            #expect(response.status == .ok)
            let results = try response.decoded(ReadingEventBatchResponse.self).results
            #expect(results.count == cases.count)
            for (index, (result, expected)) in zip(results, cases).enumerated() {
                #expect(result.code?.rawValue == expected.1, "event \(index)")
            }
            #expect(results[7].field == "platform")
            #expect(results[13].status == .duplicate)
            #expect(try harness.readTopic("reading.events.v2", expecting: 3).count == 2)
        }
    }

    @Test("missing, expired and forged tokens are 401 UNAUTHENTICATED")
    func authentication() async throws {
        try await Self.withHarness { harness in
            let body: JSONValue = .object(["events": .array([sampleEvent()])])
            let expired = harness.codec.issue(userID: "u", ttl: -120)
            let forged = JWTForgery.resign(harness.userToken("u"), secret: "some-other-secret-0123456789")
            for token in [nil, expired, forged, "not.a.token"] as [String?] {
                let response = try await harness.request(.post, "/learning/reading-events/batch", token: token, json: body)
                #expect(response.status == .unauthorized)
                #expect(response.errorCode == "UNAUTHENTICATED")
            }
        }
    }

    @Test("malformed JSON is 400; too many events or bytes is 413; too many requests is 429 with Retry-After")
    func wholeRequestErrors() async throws {
        try await Self.withHarness(configuration: IngestConfiguration(maxBatchEvents: 5, maxBatchBytes: 8192,
                                                                      rateLimitPerSecond: 0.1, rateLimitBurst: 3)) { harness in
            let token = harness.userToken("user-d")
            let bad = await harness.request(.post, "/learning/reading-events/batch", token: token, body: Array("{\"events\":[".utf8))
            #expect(bad.status == .badRequest)
            #expect(bad.errorCode == "INVALID_JSON")
            let tooMany = try await harness.postBatch(user: "user-d", events: (0..<6).map { _ in sampleEvent() })
            #expect(tooMany.status == .payloadTooLarge)
            #expect(tooMany.errorCode == "PAYLOAD_TOO_LARGE")
            let big = await harness.request(.post, "/learning/reading-events/batch", token: token, body: Array(repeating: 0x20, count: 9000))
            #expect(big.status == .payloadTooLarge)
            let ok = try await harness.postBatch(user: "user-d", events: [sampleEvent()])
            #expect(ok.status == .ok)
            let limited = try await harness.postBatch(user: "user-d", events: [sampleEvent()])
            #expect(limited.status == .tooManyRequests)
            #expect(limited.errorCode == "RATE_LIMITED")
            #expect(Int(limited.headers["Retry-After"] ?? "") ?? 0 >= 1)
            let other = try await harness.postBatch(user: "user-e", events: [sampleEvent()])
            #expect(other.status == .ok)
        }
    }

    @Test("with the broker down the answer is 503 with Retry-After and no event is reported accepted")
    func brokerDown() async throws {
        try await Self.withHarness { harness in
            let warm = try await harness.postBatch(user: "user-f", events: [sampleEvent()])
            #expect(warm.status == .ok)
            try harness.cluster.setAllBrokersDown()
            let events = (0..<4).map { _ in sampleEvent() }
            let down = try await harness.postBatch(user: "user-f", events: events)
            #expect(down.status == .serviceUnavailable)
            #expect(down.errorCode == "SERVICE_UNAVAILABLE")
            #expect(down.headers["Retry-After"] != nil)
            #expect(!String(decoding: down.body, as: UTF8.self).contains("accepted"))
            try harness.cluster.setAllBrokersUp()
        }
    }
}

/// Re-signs a token's header and payload with another secret: a forged token.
enum JWTForgery {
    static func resign(_ token: String, secret: String) -> String {
        let parts = token.split(separator: ".")
        let input = parts[0] + "." + parts[1]
        let other = JWTCodecShim.signature(input: String(input), secret: secret)
        return input + "." + other
    }
}
