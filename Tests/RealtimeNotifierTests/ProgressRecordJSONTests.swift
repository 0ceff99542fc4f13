import BackboneTestSupport
import Contracts
import Foundation
import JSON
import Testing
@testable import RealtimeNotifier

/// The progress record read once (yajl for the projector's records, `JSONDecoder` for the rest),
/// its payload built from the change and written by `JSONWriter`: the same drafts, the same
/// payload bytes, the same records accepted and refused as the four Foundation passes before.
@Suite("A progress record read once")
struct ProgressRecordJSONTests {
    /// The sequencer's progress path as it was: decode, encode and decode the change into a
    /// `JSONValue`, encode the payload with `ContractCoding.encoder`.
    static func formerInput(_ value: [UInt8]) throws -> (channel: String, payload: JSONValue, text: String) {
        let change = try ContractCoding.decode(ReadingProgressChanged.self, from: value)
        guard ChannelName.user(change.userId) != nil else { throw InvalidUser() }
        let payload = try ChannelSequencer.json(change)
        return ("user:" + change.userId, payload, String(decoding: try ContractCoding.encoder.encode(payload), as: UTF8.self))
    }

    struct InvalidUser: Error {}

    static let at = Date(timeIntervalSince1970: 1_796_000_000.123)

    /// Positions of every kind: none, page, fraction, scroll, an anchor alone, other members
    /// (nested, keys whose sorted order differs by case and digits), empty.
    static let positions: [ReadingPosition?] = [
        nil,
        .page(1, of: 1), .page(12, of: 300, anchor: "epubcfi(/6/4!/4/2/1:0)"),
        .fraction(0), .fraction(1), .fraction(0.333333333333333), .fraction(1e-7),
        .scroll(0, of: 1), .scroll(1234.5, of: 98765.4321, anchor: "p-3"),
        ReadingPosition(anchor: "第三章 “引号” / slash"),
        ReadingPosition(page: 3, totalPages: 9, extra: [
            "chapterId": .string("ch-3"), "zoom": .number(1.25), "Zoom": .bool(false), "a10": .null, "a9": .number(-0.0),
            "nested": .object(["b": .array([.number(1), .number(2.5), .string("x"), .object([:])]), "A": .number(1e16)]),
            "big": .number(9_007_199_254_740_992), "tiny": .number(0.000001), "é": .string("non-ASCII key"),
        ]),
        ReadingPosition(),
    ]

    static let percents: [Double] = [0, 100, 41.67, 100.0 / 3, 0.1 + 0.2, -0.0, 1e-7, 123_456.789, 1e16, 99.99, 2.5]

    /// Many changes: every status, position kind and percent, the optionals present and nil.
    static var changes: [ReadingProgressChanged] {
        var changes: [ReadingProgressChanged] = []
        var i = 0
        for status in ReadingStatus.allCases {
            for position in positions {
                for percent in percents {
                    i += 1
                    changes.append(ReadingProgressChanged(
                        userId: i % 5 == 0 ? "用户-\(i)" : "user-\(i)", materialId: "material-\(i % 7)", status: status,
                        lastPosition: position, progressPercent: percent,
                        totalActiveSeconds: [0, 15, 3_600_000, Int.max, -5][i % 5],
                        lastReadAt: i % 3 == 0 ? nil : at.addingTimeInterval(Double(i) * 0.0015),
                        lastSessionId: i % 4 == 0 ? nil : "session-\(i)"))
                }
            }
        }
        var other = changes[1]
        other.schemaVersion = 2
        changes.append(other)
        return changes
    }

    @Test("the payload built from a change equals its encode-and-decode, and is written to the same bytes")
    func payloadEqualsRoundTrip() throws {
        let changes = Self.changes
        #expect(changes.count > 390)
        for change in changes {
            let former = try ChannelSequencer.json(change)
            let payload = ChannelSequencer.progressPayload(change)
            #expect(payload == former, "\(change)")
            #expect(PhoenixMessage.json(payload) == String(decoding: try ContractCoding.encoder.encode(former), as: UTF8.self), "\(change)")
        }
    }

    @Test("a record the projector writes takes the fast reader and gives what JSONDecoder gives")
    func projectorRecordsReadFast() throws {
        for change in Self.changes {
            let value = try ContractCoding.encode(change)
            let fast = try #require(ProgressRecordJSON.change(value), "\(String(decoding: value, as: UTF8.self))")
            #expect(fast == (try ContractCoding.decode(ReadingProgressChanged.self, from: value)))
            let input = try ChannelSequencer.input(progress: value)
            let former = try Self.formerInput(value)
            #expect(input.drafts.count == 1)
            #expect(input.drafts[0].channel.name == former.channel)
            #expect(input.drafts[0].event == "progress_updated")
            #expect(input.drafts[0].payload == former.payload)
            #expect(PhoenixMessage.json(input.drafts[0].payload) == former.text)
        }
    }

    /// Texts that are valid JSON, or nearly, but not the projector's plain records.
    static let awkward: [String] = {
        let base = #""userId":"u1","materialId":"m1","status":"in_progress","progressPercent":10,"totalActiveSeconds":5"#
        var texts = [
            "{\(base)}",
            #"{"schemaVersion":1,\#(base)}"#,
            #"{"schemaVersion":1,\#(base),"lastPosition":null,"lastReadAt":null,"lastSessionId":null}"#,
            #"{"schemaVersion":1,"schemaVersion":2,\#(base)}"#,
            #"{"schemaVersion":1,\#(base),"userId":"u2"}"#,
            #"{"schemaVersion":1,\#(base),"extra":1,"extra":{"deep":[1,2,{"x":null}]}}"#,
            #"{"schemaVersion":1.0,\#(base)}"#, #"{"schemaVersion":1e0,\#(base)}"#, #"{"schemaVersion":1E0,\#(base)}"#,
            #"{"schemaVersion":-0,\#(base)}"#, #"{"schemaVersion":01,\#(base)}"#, #"{"schemaVersion":"1",\#(base)}"#,
            #"{"schemaVersion":true,\#(base)}"#, #"{"schemaVersion":[1],\#(base)}"#, #"{"schemaVersion":1.5,\#(base)}"#,
            #"{"schemaVersion":9223372036854775807,\#(base)}"#, #"{"schemaVersion":-9223372036854775808,\#(base)}"#,
            #"{"schemaVersion":99999999999999999999,\#(base)}"#,
            #"{"schemaVersion":1,"userId":"u\u0031","materialId":"m1","status":"in_progress","progressPercent":10,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"user\u0049d":"u1","materialId":"m1","status":"in_progress","progressPercent":10,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u\"1","materialId":"m1","status":"in_progress","progressPercent":10,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u\ud800","materialId":"m1","status":"in_progress","progressPercent":10,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"done","progressPercent":10,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"IN_PROGRESS","progressPercent":10,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":null,"progressPercent":10,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":null,"materialId":"m1","status":"completed","progressPercent":10,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"","materialId":"m1","status":"completed","progressPercent":10,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u 1","materialId":"m1","status":"completed","progressPercent":10,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":7,"status":"completed","progressPercent":10,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":10}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":10,"totalActiveSeconds":5.0}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":10,"totalActiveSeconds":-5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":1e-400,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":0.0000000000000000000001,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":1e400,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":4.9e-324,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":-0.0,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":1e-07,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":2.5E+2,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":1e308,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":1e309,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":2.2250738585072014e-308,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":2.225073858507201e-308,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":0e5,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":-0e-5,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":1e-0400,"totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":"10","totalActiveSeconds":5}"#,
            #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"completed","progressPercent":12345678901234567890123456789,"totalActiveSeconds":5}"#,
            "{\(base),\"lastReadAt\":\"2026-12-06T10:00:00Z\"}",
            "{\(base),\"lastReadAt\":\"2026-12-06T10:00:00.5+08:00\"}",
            "{\(base),\"lastReadAt\":\"2026-12-06\"}",
            "{\(base),\"lastReadAt\":\"yesterday\"}",
            "{\(base),\"lastReadAt\":1796000000123}",
            "{\(base),\"lastReadAt\":1e300}",
            "{\(base),\"lastReadAt\":true}",
            "{\(base),\"lastSessionId\":5}",
            "{\(base),\"lastSessionId\":\"s\"}",
            "{\(base),\"lastPosition\":[]}",
            "{\(base),\"lastPosition\":\"page 3\"}",
            "{\(base),\"lastPosition\":{}}",
            "{\(base),\"lastPosition\":{\"page\":null,\"anchor\":null,\"other\":null}}",
            "{\(base),\"lastPosition\":{\"page\":2,\"page\":3}}",
            "{\(base),\"lastPosition\":{\"x\":1,\"x\":2}}",
            "{\(base),\"lastPosition\":{\"x\":{\"y\":1,\"y\":2}}}",
            "{\(base),\"lastPosition\":{\"K\":1,\"\u{212A}\":2}}",
            "{\(base),\"lastPosition\":{\"pag\u{0065}\u{0301}\":1}}",
            "{\(base),\"lastPosition\":{\"page\":\"2\"}}",
            "{\(base),\"lastPosition\":{\"page\":2.0,\"totalPages\":4}}",
            "{\(base),\"lastPosition\":{\"page\":2.5}}",
            "{\(base),\"lastPosition\":{\"progress\":1}}",
            "{\(base),\"lastPosition\":{\"progress\":true}}",
            "{\(base),\"lastPosition\":{\"anchor\":7}}",
            "{\(base),\"lastPosition\":{\"zoom\":1e400}}",
            "{\(base),\"lastPosition\":{\"zoom\":1e-400}}",
            "{\(base),\"lastPosition\":{\"zoom\":1.5e2,\"flag\":true,\"list\":[null,false,\"s\",[],{}]}}",
            "{\(base),\"lastPosition\":{\"deep\":" + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}}",
            "{\(base),\"other\":" + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}",
            "{\(base),\"other\":" + String(repeating: "{\"a\":", count: 100) + "1" + String(repeating: "}", count: 100) + "}",
            "{\(base),\"\u{1F642}\":1}",
            "{\(base),\"note\":\"漢字 🙂\"}",
            "\u{FEFF}{\(base)}",
            " \n\t{\(base)} \r\n",
            "{\(base)} {}",
            "{\(base)}x",
            "{\(base),}",
            "{\(base)",
            "[{\(base)}]",
            "{\(base),\"lastPosition\":{\"page\":1}/* c */}",
        ]
        texts += texts.map { $0.replacingOccurrences(of: "\"u1\"", with: "\"" + String(repeating: "u", count: 300) + "\"") }
        return texts
    }()

    /// Bytes the texts cannot carry: invalid and overlong UTF-8, raw control characters, NUL.
    static let awkwardBytes: [[UInt8]] = {
        let head = Array(#"{"schemaVersion":1,"userId":"u1","materialId":"m"#.utf8)
        let tail = Array(#"","status":"in_progress","progressPercent":10,"totalActiveSeconds":5}"#.utf8)
        return [[0xC3, 0x28], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFF], [0x01], [0x00], [0x0A], [0xE6, 0xBC]]
            .map { head + $0 + tail }
    }()

    /// Every record here: JSONDecoder's verdict is kept — the fast reader only ever takes a record
    /// JSONDecoder takes, with the same value — and the sequencer accepts and refuses as before.
    func expectSameVerdict(_ value: [UInt8]) {
        let text = String(decoding: value, as: UTF8.self)
        let foundation = try? ContractCoding.decode(ReadingProgressChanged.self, from: value)
        if let fast = ProgressRecordJSON.change(value) {
            #expect(foundation == fast, "the fast reader took \(text.debugDescription)")
        }
        let former = Result(catching: { try Self.formerInput(value) })
        let input = Result(catching: { try ChannelSequencer.input(progress: value) })
        switch (former, input) {
        case (.success(let former), .success(let input)):
            #expect(input.drafts.map(\.channel.name) == [former.channel], "\(text.debugDescription)")
            #expect(input.drafts.first?.payload == former.payload, "\(text.debugDescription)")
            #expect(input.drafts.first.map { PhoenixMessage.json($0.payload) } == former.text, "\(text.debugDescription)")
        case (.failure, .failure):
            break
        default:
            Issue.record("accepted one way and refused the other: \(text.debugDescription)")
        }
    }

    @Test("awkward, hostile and malformed records get JSONDecoder's verdict", arguments: [false, true])
    func awkwardRecords(longUser: Bool) throws {
        var values = Self.awkward.map { Array($0.utf8) } + Self.awkwardBytes + HostileRecords.shapeless()
        let valid = #"{"schemaVersion":1,"userId":"u1","materialId":"m1","status":"in_progress","progressPercent":10,"totalActiveSeconds":5,"lastPosition":{"page":1,"totalPages":2},"lastReadAt":"2026-12-06T10:00:00.000Z","lastSessionId":"s1"}"#
        for field in ["schemaVersion", "userId", "materialId", "status", "progressPercent", "totalActiveSeconds", "lastPosition",
                      "lastReadAt", "lastSessionId"] {
            values += try HostileRecords.absurdField(field, in: valid)
        }
        if longUser { values = values.map { Array(String(decoding: $0, as: UTF8.self).replacingOccurrences(of: "u1", with: "用户1").utf8) } }
        for value in values { expectSameVerdict(value) }
    }

    @Test("records with bytes deleted, inserted or changed at random get JSONDecoder's verdict")
    func mutatedRecords() throws {
        let sources = try Self.changes.enumerated().filter { $0.offset % 9 == 0 }.map { try ContractCoding.encode($0.element) }
        var fast = 0
        for value in HostileRecords.mutated(sources, count: 4000) {
            if ProgressRecordJSON.change(value) != nil { fast += 1 }
            expectSameVerdict(value)
        }
        // Some mutants are still plain records (a digit changed, an unknown key's value): the
        // fast reader is exercised, not only the fallback.
        #expect(fast > 0)
    }

    /// Arbitrary `JSONValue`s as broadcasts carry them.
    static func randomValue(_ depth: Int, _ rng: inout some RandomNumberGenerator) -> JSONValue {
        let keys = ["a", "B", "b", "a10", "a9", "_", "é", "Z", "zz", "1", "10", "9", "\u{1F642}", "K", "\u{212A}x", "sp ace", "q\"uote",
                    "back\\slash", "nl\n", "tab\t", "c\u{1}", "/", "ｆｕｌｌ"]
        switch Int.random(in: 0..<(depth > 3 ? 5 : 7), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2:
            let numbers: [Double] = [0, -0.0, 1, -1, 0.5, 1e-7, 1e20, 9e15, 8_999_999_999_999_999, 123.456, 1e308, .leastNonzeroMagnitude, 0.1 + 0.2,
                                     Double(Int.random(in: -1_000_000...1_000_000, using: &rng)) / 100]
            return .number(numbers.randomElement(using: &rng)!)
        case 3, 4: return .string(keys.randomElement(using: &rng)! + "/\u{7F}\u{2028}漢")
        case 5: return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in randomValue(depth + 1, &rng) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...6, using: &rng) { members[keys.randomElement(using: &rng)!] = randomValue(depth + 1, &rng) }
            return .object(members)
        }
    }

    @Test("object keys are written in the order JSONEncoder sorts them: by their UTF-8 bytes")
    func keysInFoundationOrder() throws {
        let keys = ["J", "K", "L", "ey", "e\u{301}x", "fi", "é", "éw", "\u{212A}x", "\u{FB01}", "\u{FF46}", "🙂", "a10", "a9", "_", "Z"]
        let value = JSONValue.object(Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($0.element, .number(Double($0.offset))) }))
        #expect(PhoenixMessage.json(value) == String(decoding: try ContractCoding.encoder.encode(value), as: UTF8.self))
    }

    @Test("a payload's text is the bytes ContractCoding.encoder writes, for any JSON value")
    func payloadTextAsFoundation() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let value = Self.randomValue(0, &rng)
            #expect(PhoenixMessage.json(value) == String(decoding: try ContractCoding.encoder.encode(value), as: UTF8.self), "\(value)")
        }
        for bad in [Double.infinity, -Double.infinity, Double.nan] {
            let value = JSONValue.object(["a": .array([.number(1), .number(bad)])])
            #expect((try? ContractCoding.encoder.encode(value)) == nil)
            #expect(PhoenixMessage.json(value) == "null")
        }
    }
}
