import BackboneTestSupport
import Contracts
import Foundation
import JSON
import Testing

/// The hand-written hot path (yajl reader, `JSONWriter`, canonical timestamps) must read and
/// write exactly what the `Codable` conformances do; these tests hold the two side by side.
@Suite("Reading-event JSON fast path")
struct ReadingEventJSONTests {
    static let awkward: [String] = ["", "plain", "quote\"d", "back\\slash", "a/b", "tab\tnew\nline\r", "\u{1}\u{8}\u{c}\u{1f}\u{7f}",
                                    "中文阅读", "emoji 😀", "\u{2028}\u{2029}", "ü"]

    static func string(_ g: inout SplitMix64) -> String {
        (0..<Int.random(in: 1...3, using: &g)).map { _ in awkward.randomElement(using: &g)! }.joined()
    }

    static func date(_ g: inout SplitMix64) -> Date {
        Date(timeIntervalSince1970: Double(Int64.random(in: -2_000_000_000_000...4_000_000_000_000, using: &g)) / 1000)
    }

    static func position(_ g: inout SplitMix64) -> ReadingPosition? {
        let anchor = Bool.random(using: &g) ? string(&g) : nil
        switch Int.random(in: 0..<4, using: &g) {
        case 0: return nil
        case 1: return .page(Int.random(in: 1...500, using: &g), of: 500, anchor: anchor)
        case 2: return .fraction([0, 1, 0.42, 1.0 / 3, 1.5e-7, Double.random(in: 0...1, using: &g)].randomElement(using: &g)!, anchor: anchor)
        default: return .scroll([0, 1200, 1e20, 123_456_789_012_345_680, Double.random(in: 0...5000, using: &g)].randomElement(using: &g)!,
                                of: 5000.5, anchor: anchor)
        }
    }

    static func record(_ g: inout SplitMix64) -> ReadingEventRecord {
        var record = ReadingEventRecord(userId: string(&g), receivedAt: date(&g), item: ReadingEventUploadItem(
            eventId: UUID().uuidString, clientSessionId: string(&g),
            readingTargetType: ReadingTargetType.allCases.randomElement(using: &g)!, materialId: string(&g),
            knowledgeBaseId: Bool.random(using: &g) ? string(&g) : nil, eventType: ReadingEventType.allCases.randomElement(using: &g)!,
            position: position(&g), activeSecondsDelta: Int.random(in: 0...3600, using: &g), clientTimestamp: date(&g),
            clientTimezoneOffsetMinutes: Int.random(in: -720...840, using: &g), sequence: Int.random(in: 0...Int.max, using: &g),
            platform: string(&g), appVersion: string(&g)))
        record.schemaVersion = Int.random(in: 1...3, using: &g)
        return record
    }

    @Test("records encode byte for byte as JSONEncoder does, and decode to the same value as JSONDecoder")
    func recordsMatchCodable() throws {
        var g = SplitMix64(state: 42)
        for _ in 0..<2_000 {
            let record = Self.record(&g)
            let reference = try ContractCoding.encode(record)
            #expect(String(decoding: record.json, as: UTF8.self) == String(decoding: reference, as: UTF8.self))
            let viaCodable = try ContractCoding.decode(ReadingEventRecord.self, from: reference)
            let fast = try ReadingEventRecord(json: reference)
            #expect(fast == viaCodable, "\(fast) vs \(viaCodable)")
        }
    }

    @Test("the golden record fixture decodes the same both ways")
    func goldenRecord() throws {
        let bytes = try GoldenFixtureTests.bytes("reading-event-record.json")
        #expect(try ReadingEventRecord(json: bytes) == ContractCoding.decode(ReadingEventRecord.self, from: bytes))
    }

    @Test("a stored position decodes to what JSONDecoder decodes, every field set or not")
    func positionsMatchCodable() throws {
        var g = SplitMix64(state: 7)
        for _ in 0..<2_000 {
            var position = Self.position(&g) ?? ReadingPosition()
            if Bool.random(using: &g) {  // every field, as odd as the contract allows
                position = ReadingPosition(page: Int.random(in: Int.min...Int.max, using: &g), totalPages: Int.random(in: 1...1_000_000, using: &g),
                                           progress: Double.random(in: -1e300...1e300, using: &g), scrollOffset: 1e20,
                                           contentLength: 123_456_789_012_345_680, anchor: Self.string(&g))
            }
            let bytes = try ContractCoding.encode(position)
            let fast = try ReadingPosition(json: bytes)
            #expect(fast == (try JSONDecoder().decode(ReadingPosition.self, from: Data(bytes))), "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    @Test("an odd stored position decodes, or fails, as it does with JSONDecoder", arguments: [
        // what jsonb gives back: keys ordered by length, normalised numbers
        #"{"page": 3, "anchor": "§2", "totalPages": 40}"#, #"{"progress": 1.0}"#, #"{"progress": 0}"#, #"{"page": 3.0, "totalPages": 4}"#,
        #"{"page": 100, "totalPages": 1000000}"#, #"{"progress": -0.0}"#, #"{"progress": 1.5e-7}"#, #"{"scrollOffset": 1E+20, "contentLength": 5e3}"#,
        // unknown keys, nested or not, and nulls are ignored
        #"{"page": 1, "zoom": 2.5, "extra": {"a": [1, {"b": null}]}, "totalPages": 2}"#, #"{"page": null, "anchor": null}"#, #"{}"#,
        #"{"future": [], "progress": 0.5, "anchor": "x"}"#,
        // wrong types and values out of range fail
        #"{"page": "3"}"#, #"{"page": 3.5}"#, #"{"page": 1e400}"#, #"{"progress": 1e400}"#, #"{"page": 9223372036854775808}"#,
        #"{"page": -9223372036854775808}"#, #"{"anchor": 5}"#, #"{"anchor": {"x": 1}}"#, #"{"progress": [0.5]}"#, #"{"page": true}"#,
        // not an object
        "null", "[]", "3", #""page""#, "", "{", #"{"page": 1} {}"#,
    ])
    func oddPositions(_ text: String) {
        let reference = try? JSONDecoder().decode(ReadingPosition.self, from: Data(text.utf8))
        let fast = try? ReadingPosition(json: Array(text.utf8))
        #expect(fast == reference, "\(text): \(String(describing: fast)) vs \(String(describing: reference))")
    }

    @Test("batch responses encode byte for byte as JSONEncoder does")
    func batchResponse() throws {
        let response = ReadingEventBatchResponse(results: [
            .accepted("0B7D5A38-1A4E-4F7C-9C4E-2D1F6A1B2C3D"), .duplicate("e1"),
            .rejected(nil, .invalidField, field: "event", message: "an event must be a JSON object"),
            .rejected("x\"y", .invalidPosition, field: "position", message: "position must be {page,totalPages}"),
        ])
        #expect(String(decoding: response.json, as: UTF8.self) == String(decoding: try ContractCoding.encode(response), as: UTF8.self))
        #expect(ReadingEventBatchResponse(results: []).json == (try ContractCoding.encode(ReadingEventBatchResponse(results: []))))
    }

    @Test("a record missing a field, or with one of the wrong type, is refused with the field's name")
    func strictRecord() throws {
        var g = SplitMix64(state: 7)
        let good = try JSONSerialization.jsonObject(with: Data(Self.record(&g).json)) as! [String: Any]
        for (field, value) in [("userId", nil), ("receivedAt", "yesterday"), ("sequence", "1"), ("eventType", "skimmed"),
                               ("position", 3), ("activeSecondsDelta", 1.5)] as [(String, Any?)] {
            var object = good
            object[field] = value
            let bytes = Array(try JSONSerialization.data(withJSONObject: object))
            #expect(throws: ReadingEventJSON.Error.self) { try ReadingEventRecord(json: bytes) }
            #expect(throws: (any Error).self) { try ContractCoding.decode(ReadingEventRecord.self, from: bytes) }
            do { _ = try ReadingEventRecord(json: bytes) } catch { #expect(error.description.hasPrefix(field)) }
        }
    }

    @Test("an upload body is read leniently, field by field")
    func lenientBatch() throws {
        let body = #"""
        {"ignored":{"deep":[1,{"events":2}]},"events":[
          {"eventId":"a","sequence":3.0,"activeSecondsDelta":"5","clientTimezoneOffsetMinutes":1e2,"platform":null,
           "position":{"page":2,"totalPages":9,"extra":[1]},"unknown":{"eventId":"nested"},"clientTimestamp":1796026545123},
          7, [1,[2]], null,
          {"eventId":["x"],"position":"top","clientTimestamp":"2026-11-30T08:15:30+08:00","sequence":99999999999999999999}
        ]}
        """#
        let events = try RawReadingEvent.parseBatch(Array(body.utf8))
        #expect(events.count == 5)
        let first = events[0]
        #expect(first.isObject && first.eventId.value == "a" && first.sequence.value == 3)
        guard case .invalid = first.activeSecondsDelta, case .null = first.platform, case .missing = first.materialId else {
            Issue.record("field states: \(first)")
            return
        }
        #expect(first.clientTimezoneOffsetMinutes.value == 100)
        #expect(first.position.value?.page.value == 2 && first.position.value?.extra == ["extra": .array([.number(1)])])
        #expect(first.clientTimestamp.value?.date?.timeIntervalSince1970 == 1_796_026_545.123)
        #expect(events[1...3].allSatisfy { !$0.isObject })
        let last = events[4]
        guard case .invalid = last.eventId, case .invalid = last.position, case .invalid = last.sequence else {
            Issue.record("field states: \(last)")
            return
        }
        #expect(last.clientTimestamp.value?.date == ContractCoding.parseTimestamp("2026-11-30T00:15:30Z"))
    }

    @Test("a body that is not JSON, or not {\"events\":[…]}, is refused as a whole",
          arguments: ["", "nope", "[]", "{}", #"{"events":5}"#, #"{"events":null}"#, #"{"events":[]} x"#, #"{"events":[{]}"#,
                      "{\"events\":[\"\u{FFFD}\"]", #"{"events":[{"eventId":"a"}]"#])
    func malformedBatch(_ body: String) {
        #expect(throws: ReadingEventJSON.Error.self) { try RawReadingEvent.parseBatch(Array(body.utf8)) }
    }

    @Test("invalid UTF-8 inside a string is refused")
    func invalidUTF8() {
        let body: [UInt8] = Array(#"{"events":[{"eventId":""#.utf8) + [0xC3, 0x28] + Array(#""}]}"#.utf8)
        #expect(throws: ReadingEventJSON.Error.self) { try RawReadingEvent.parseBatch(body) }
    }

    @Test("timestamps format and parse as Foundation's ISO-8601 style does")
    func timestamps() throws {
        var g = SplitMix64(state: 1)
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)  // .fff truncated, so compared on whole seconds
        for _ in 0..<5_000 {
            let date = Self.date(&g)
            let text = ContractCoding.formatTimestamp(date)
            let millis = (date.timeIntervalSince1970 * 1000).rounded()
            let seconds = (millis / 1000).rounded(.down)
            let reference = style.format(Date(timeIntervalSince1970: seconds)).dropLast(5) + String(format: ".%03dZ", Int(millis - seconds * 1000))
            #expect(text == reference)
            let parsed = try #require(ContractCoding.parseTimestamp(text))
            #expect((parsed.timeIntervalSince1970 * 1000).rounded() == millis)
            #expect(ContractCoding.formatTimestamp(parsed) == text)
        }
        for text in ["2026-11-30T08:15:30Z", "2026-11-30T08:15:30.1+08:00", "2024-02-29T23:59:59.999999-05:30",
                     "2026-11-30T08:15:30.123456789Z"] {
            let fast = try #require(ContractCoding.parseTimestamp(text))
            let reference = try Date.ISO8601FormatStyle(includingFractionalSeconds: text.contains(".")).parse(text)
            #expect(abs(fast.timeIntervalSince1970 - reference.timeIntervalSince1970) < 1e-6, "\(text)")
        }
        // Outside the canonical form, Foundation's (lenient) parser decides.
        #expect(ContractCoding.parseTimestamp("2026-11-30T08:15:30+0800") != nil)
        #expect(ContractCoding.parseTimestamp("2026-11-30 08:15:30Z") == nil)
        #expect(ContractCoding.parseTimestamp("30/11/2026") == nil)
        // Anything after the zone, which Foundation's parser alone would ignore, makes it no timestamp.
        for text in ["2026-11-30T08:15:30Zgarbage", "2026-11-30T08:15:30Z\u{0}", "2026-11-30T08:15:30Z ", "2026-11-30T08:15:30+0800x",
                     "2026-11-30T08:15:30.5Z;DROP"] {
            #expect(ContractCoding.parseTimestamp(text) == nil, "\(text.debugDescription)")
        }
    }
}
