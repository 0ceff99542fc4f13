import Contracts
import Foundation
import Ingest
import JSON
import Testing

@Suite("Reading-event validation")
struct ReadingEventValidatorTests {
    let validator = ReadingEventValidator()
    let now = Date(timeIntervalSince1970: 1_796_000_000)

    func code(_ overrides: [String: JSONValue], type: String = "heartbeat") -> ErrorCode? {
        let event = sampleEvent(type: type, timestamp: .string(ContractCoding.formatTimestamp(now.addingTimeInterval(-5))), overrides)
        if case .failure(let rejection) = validator.validate(event, now: now) { return rejection.code }
        return nil
    }

    @Test("an event as the iOS app writes it is valid, with ISO-8601 or epoch-millisecond timestamps")
    func validEvents() throws {
        #expect(code([:]) == nil)
        #expect(code(["clientTimestamp": .number(now.timeIntervalSince1970 * 1000 - 3000)]) == nil)
        #expect(code(["clientTimestamp": .string("2026-11-30T08:50:00+08:00")]) == nil)
        let event = sampleEvent(timestamp: .number((now.timeIntervalSince1970 - 1) * 1000))
        let item = try validator.validate(event, now: now).get()
        #expect(abs(item.clientTimestamp.timeIntervalSince(now.addingTimeInterval(-1))) < 0.001)
        #expect(item.position == .page(3, of: 12))
    }

    @Test("the iOS golden batch validates event by event", arguments: [0, 1, 2])
    func goldenBatch(index: Int) throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../ContractsTests/Fixtures/reading-event-batch.ios.json")
        let batch = try ContractCoding.decoder.decode(JSONValue.self, from: Data(contentsOf: url))
        let item = try #require(batch["events"]?.arrayValue?[index])
        let fixtureNow = Date(timeIntervalSince1970: 1_796_026_600)
        #expect((try? validator.validate(item, now: fixtureNow).get()) != nil)
    }

    @Test("epoch seconds and seconds since 2001 (JSONEncoder's default) are read as the same instant as epoch milliseconds")
    func numericTimestampForms() throws {
        let instant = now.addingTimeInterval(-90)
        let forms: [Double] = [instant.timeIntervalSince1970 * 1000, instant.timeIntervalSince1970, instant.timeIntervalSinceReferenceDate]
        for form in forms {
            let item = try validator.validate(sampleEvent(timestamp: .number(form)), now: now).get()
            #expect(abs(item.clientTimestamp.timeIntervalSince(instant)) < 0.001, "form \(form)")
        }
        let old = now.addingTimeInterval(-31 * 86_400)
        for form in [old.timeIntervalSince1970 * 1000, old.timeIntervalSince1970, old.timeIntervalSinceReferenceDate, 1e300, -1] {
            #expect(code(["clientTimestamp": .number(form)]) == .invalidTimestamp, "form \(form)")
        }
    }

    @Test("a missing or malformed eventId is INVALID_EVENT_ID")
    func eventID() {
        #expect(code(["eventId": .string("not-a-uuid")]) == .invalidEventID)
        #expect(code(["eventId": .number(7)]) == .invalidEventID)
        #expect(code(["eventId": .null]) == .invalidEventID)
    }

    @Test("an unknown eventType is INVALID_EVENT_TYPE")
    func eventType() {
        #expect(code(["eventType": .string("scrolled")]) == .invalidEventType)
        #expect(code(["eventType": .null]) == .invalidEventType)
    }

    @Test("any JSON object is a position, kept as sent; only a recognised key with an impossible value, a non-object or one over the bounds is INVALID_POSITION")
    func positions() throws {
        #expect(code(["position": .object(["progress": .number(0.42)])]) == nil)
        #expect(code(["position": .object(["scrollOffset": .number(1200), "contentLength": .number(5000), "anchor": .string("p:12")])]) == nil)
        #expect(code(["position": .object(["page": .number(3), "totalPages": .number(12), "anchor": .string("epubcfi(/6/4)")])]) == nil)
        #expect(code(["position": .null]) == nil)
        // Shapes this system does not read, as other readers' runtimes write them.
        #expect(code(["position": .object(["chapter": .number(3), "offset": .number(0.42)])]) == nil)
        #expect(code(["position": .object(["pdfPage": .number(5), "zoom": .number(1.5), "x": .number(10), "y": .number(20)])]) == nil)
        #expect(code(["position": .object(["page": .number(3), "totalPages": .number(10), "chapterId": .string("c2"),
                                           "cfi": .string("epubcfi(/6/4!/4/2)")])]) == nil)
        #expect(code(["position": .object(["progress": .number(0.5), "page": .number(1), "totalPages": .number(2)])]) == nil)
        #expect(code(["position": .object(["loc": .object(["章": .string("第三章"), "path": .array([.number(1), .bool(true), .null])])])]) == nil)
        #expect(code(["position": .object([:])]) == nil)
        let kept = try validator.validate(sampleEvent(timestamp: .string(ContractCoding.formatTimestamp(now.addingTimeInterval(-5))),
            ["position": .object(["page": .number(3), "totalPages": .number(10), "chapterId": .string("c2")])]), now: now).get()
        #expect(kept.position == ReadingPosition(page: 3, totalPages: 10, extra: ["chapterId": .string("c2")]))

        #expect(code(["position": .object(["page": .number(0), "totalPages": .number(12)])]) == .invalidPosition)
        #expect(code(["position": .object(["page": .number(13), "totalPages": .number(12)])]) == .invalidPosition)
        #expect(code(["position": .object(["page": .number(2.5), "totalPages": .number(12)])]) == .invalidPosition)
        #expect(code(["position": .object(["progress": .number(1.2)])]) == .invalidPosition)
        #expect(code(["position": .object(["progress": .number(-0.1)])]) == .invalidPosition)
        #expect(code(["position": .object(["scrollOffset": .number(6000), "contentLength": .number(5000)])]) == .invalidPosition)
        #expect(code(["position": .string("page 3")]) == .invalidPosition)
        #expect(code(["position": .array([.number(3)])]) == .invalidPosition)
        #expect(code(["position": .object(["progress": .number(0.5), "anchor": .number(3)])]) == .invalidPosition)
        #expect(code(["position": .null], type: "positionChanged") == .invalidPosition)
        // The bounds: 4,096 bytes, 8 levels.
        #expect(code(["position": .object(["notes": .string(String(repeating: "x", count: 5000))])]) == .invalidPosition)
        var deep = JSONValue.number(1)
        for _ in 0..<9 { deep = .array([deep]) }
        #expect(code(["position": .object(["deep": deep])]) == .invalidPosition)
        var eight = JSONValue.number(1)
        for _ in 0..<7 { eight = .array([eight]) }
        #expect(code(["position": .object(["deep": eight])]) == nil)
    }

    @Test("timezoneOffsetMinutes (seed 000) is read as clientTimezoneOffsetMinutes (seed 001)")
    func timezoneSynonym() throws {
        let stamp = JSONValue.string(ContractCoding.formatTimestamp(now.addingTimeInterval(-5)))
        var event = sampleEvent(timestamp: stamp)
        if case .object(var members) = event {
            members["clientTimezoneOffsetMinutes"] = nil
            members["timezoneOffsetMinutes"] = .number(-300)
            event = .object(members)
        }
        #expect(try validator.validate(event, now: now).get().clientTimezoneOffsetMinutes == -300)
    }

    @Test("timestamps more than 10 minutes ahead or 30 days behind are INVALID_TIMESTAMP")
    func timestamps() {
        #expect(code(["clientTimestamp": .string(ContractCoding.formatTimestamp(now.addingTimeInterval(9 * 60)))]) == nil)
        #expect(code(["clientTimestamp": .string(ContractCoding.formatTimestamp(now.addingTimeInterval(11 * 60)))]) == .invalidTimestamp)
        #expect(code(["clientTimestamp": .string(ContractCoding.formatTimestamp(now.addingTimeInterval(-29 * 86_400)))]) == nil)
        #expect(code(["clientTimestamp": .string(ContractCoding.formatTimestamp(now.addingTimeInterval(-31 * 86_400)))]) == .invalidTimestamp)
        #expect(code(["clientTimestamp": .string("yesterday")]) == .invalidTimestamp)
        #expect(code(["clientTimestamp": .null]) == .invalidTimestamp)
    }

    @Test("negative, fractional or over-3600 active seconds are INVALID_ACTIVE_SECONDS")
    func activeSeconds() {
        #expect(code(["activeSecondsDelta": .number(3600)]) == nil)
        #expect(code(["activeSecondsDelta": .number(0)]) == nil)
        #expect(code(["activeSecondsDelta": .number(-1)]) == .invalidActiveSeconds)
        #expect(code(["activeSecondsDelta": .number(3601)]) == .invalidActiveSeconds)
        #expect(code(["activeSecondsDelta": .number(1.5)]) == .invalidActiveSeconds)
        #expect(code(["activeSecondsDelta": .string("15")]) == .invalidActiveSeconds)
    }

    @Test("a timezone offset outside −720…840 minutes is INVALID_TIMEZONE")
    func timezone() {
        #expect(code(["clientTimezoneOffsetMinutes": .number(-720)]) == nil)
        #expect(code(["clientTimezoneOffsetMinutes": .number(840)]) == nil)
        #expect(code(["clientTimezoneOffsetMinutes": .number(841)]) == .invalidTimezone)
        #expect(code(["clientTimezoneOffsetMinutes": .number(-721)]) == .invalidTimezone)
        #expect(code(["clientTimezoneOffsetMinutes": .string("+08:00")]) == .invalidTimezone)
    }

    @Test("other missing or malformed fields are INVALID_FIELD naming the field")
    func otherFields() {
        for (field, value) in [("readingTargetType", JSONValue.string("pdf")), ("materialId", .string("")),
                               ("clientSessionId", .null), ("sequence", .number(-1)), ("platform", .number(1)),
                               ("appVersion", .string(String(repeating: "9", count: 65))), ("knowledgeBaseId", .number(3))] {
            let event = sampleEvent(timestamp: .string(ContractCoding.formatTimestamp(now)), [field: value])
            guard case .failure(let rejection) = validator.validate(event, now: now) else {
                Issue.record("\(field) = \(value) was accepted")
                continue
            }
            #expect(rejection.code == .invalidField)
            #expect(rejection.field == field)
        }
        guard case .failure(let rejection) = validator.validate(.array([]), now: now) else {
            Issue.record("a non-object event was accepted")
            return
        }
        #expect(rejection.code == .invalidField)
    }
}
