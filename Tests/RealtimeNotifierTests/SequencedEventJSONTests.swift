import BackboneTestSupport
import Contracts
import Foundation
import JSON
import Testing
@testable import RealtimeNotifier

/// `realtime.sequenced.v1` written with `JSONWriter` and read with the token reader: the bytes
/// `ContractCoding.encode` wrote, and `JSONDecoder`'s verdict on every record.
@Suite("The sequenced event's record value without Foundation's coders")
struct SequencedEventJSONTests {
    static func events(_ count: Int) -> [SequencedChannelEvent] {
        var rng = SystemRandomNumberGenerator()
        let at = Date(timeIntervalSince1970: 1_796_000_000.123)
        let changes = ProgressRecordJSONTests.changes
        return (0..<count).map { i in
            let payload: JSONValue = i % 3 == 0
                ? ChannelSequencer.progressPayload(changes[i % changes.count])
                : ProgressRecordJSONTests.randomValue(0, &rng)
            return SequencedChannelEvent(
                channel: ["user:u\(i)", "room:r-\(i)", "user:用户\(i)", "broadcast:a/b"][i % 4],
                seq: [1, Int64(i), 9_007_199_254_740_993, Int64.max][i % 4], event: ["progress_updated", "ready", "x\"y"][i % 3],
                payload: payload, createdAt: at.addingTimeInterval(Double(i) * 1.0015),
                origin: i % 5 == 0 ? "origin-\(i)" : nil)
        }
    }

    @Test("the publisher writes the bytes ContractCoding.encode writes, and refuses what it refuses")
    func writtenAsFoundation() throws {
        for event in Self.events(1500) {
            #expect(try SequencedEventJSON.value(event) == ContractCoding.encode(event), "\(event)")
        }
        var bad = Self.events(1)[0]
        bad.payload = .object(["a": .number(.nan)])
        #expect(throws: (any Error).self) { try SequencedEventJSON.value(bad) }
        #expect(throws: (any Error).self) { try ContractCoding.encode(bad) }
    }

    /// The reader's verdict is `JSONDecoder`'s: the same event, or a refusal both ways.
    func expectSameVerdict(_ value: [UInt8]) {
        let text = String(decoding: value, as: UTF8.self)
        let foundation = Result(catching: { try ContractCoding.decode(SequencedChannelEvent.self, from: value) })
        let ours = Result(catching: { try SequencedEventJSON.event(value) })
        switch (foundation, ours) {
        case (.success(let a), .success(let b)): #expect(a == b, "\(text.debugDescription)")
        case (.failure, .failure): break
        default: Issue.record("accepted one way and refused the other: \(text.debugDescription)")
        }
        if let plain = SequencedEventJSON.plainEvent(value) {
            #expect((try? foundation.get()) == plain, "the token reader took \(text.debugDescription)")
        }
    }

    @Test("a record the publisher writes is read to the event JSONDecoder reads; a progress event by the token reader")
    func publisherRecordsRead() throws {
        for (i, event) in Self.events(1500).enumerated() {
            let value = try SequencedEventJSON.value(event)
            expectSameVerdict(value)
            let read = try SequencedEventJSON.event(value)
            // The same event, its time to the millisecond the text carries.
            #expect(read.channel == event.channel && read.seq == event.seq && read.event == event.event)
            #expect(read.payload == event.payload && read.origin == event.origin)
            #expect(abs(read.createdAt.timeIntervalSince(event.createdAt)) <= 0.00051)
            if i % 3 == 0 {
                // A progress payload on a channel and event without escapes: no fallback.
                #expect(SequencedEventJSON.plainEvent(value) != nil, "\(String(decoding: value, as: UTF8.self))")
            }
        }
    }

    static let awkward: [String] = {
        let payload = #"{"a":1,"b":[true,null,"x"]}"#
        let base = #""channel":"user:u1","createdAt":"2026-12-06T10:00:00.000Z","event":"progress_updated""#
        return [
            #"{\#(base),"payload":\#(payload),"seq":7}"#,
            #"{\#(base),"payload":\#(payload),"seq":7,"origin":null}"#,
            #"{\#(base),"payload":\#(payload),"seq":7,"origin":"o"}"#,
            #"{\#(base),"payload":\#(payload),"seq":7,"origin":5}"#,
            #"{\#(base),"payload":\#(payload),"seq":7,"other":{"x":[1,{"y":2}]}}"#,
            #"{\#(base),"payload":\#(payload),"seq":7,"seq":8}"#,
            #"{\#(base),"payload":\#(payload),"payload":{},"seq":7}"#,
            #"{\#(base),"payload":null,"seq":7}"#,
            #"{\#(base),"payload":3,"seq":7}"#,
            #"{\#(base),"payload":"text","seq":7}"#,
            #"{\#(base),"payload":[],"seq":7}"#,
            #"{\#(base),"seq":7}"#,
            #"{\#(base),"payload":\#(payload)}"#,
            #"{\#(base),"payload":\#(payload),"seq":7.0}"#,
            #"{\#(base),"payload":\#(payload),"seq":1e2}"#,
            #"{\#(base),"payload":\#(payload),"seq":7.5}"#,
            #"{\#(base),"payload":\#(payload),"seq":"7"}"#,
            #"{\#(base),"payload":\#(payload),"seq":-7}"#,
            #"{\#(base),"payload":\#(payload),"seq":9223372036854775807}"#,
            #"{\#(base),"payload":\#(payload),"seq":9223372036854775808}"#,
            #"{\#(base),"payload":{"a":1,"a":2},"seq":7}"#,
            #"{\#(base),"payload":{"a":{"b":1,"b":1}},"seq":7}"#,
            #"{\#(base),"payload":{"n":1e400},"seq":7}"#,
            #"{\#(base),"payload":{"n":1e-400},"seq":7}"#,
            #"{\#(base),"payload":{"n":4.9e-324},"seq":7}"#,
            #"{\#(base),"payload":{"n":-0.0,"m":1.5E+3,"k":123456789012345678901234},"seq":7}"#,
            #"{\#(base),"payload":{"s":"a\"b","t":"\u00e9"},"seq":7}"#,
            #"{\#(base),"payload":{"\u212Ax":1,"Kx":2},"seq":7}"#,
            "{\(base),\"payload\":{\"\u{212A}x\":1,\"Kx\":2},\"seq\":7}",
            "{\(base),\"payload\":{\"e\u{301}\":1,\"é\":2},\"seq\":7}",
            "{\(base),\"payload\":" + String(repeating: "[", count: 20) + String(repeating: "]", count: 20) + ",\"seq\":7}",
            "{\(base),\"payload\":{},\"seq\":7,\"x\":" + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}",
            #"{"channel":"user:u1","createdAt":"yesterday","event":"e","payload":{},"seq":7}"#,
            #"{"channel":"user:u1","createdAt":1796000000000,"event":"e","payload":{},"seq":7}"#,
            #"{"channel":"user:u1","createdAt":"2026-12-06T10:00:00+08:00","event":"e","payload":{},"seq":7}"#,
            #"{"channel":null,"createdAt":"2026-12-06T10:00:00Z","event":"e","payload":{},"seq":7}"#,
            #"{"channel":"user:u1","createdAt":"2026-12-06T10:00:00Z","event":7,"payload":{},"seq":7}"#,
            "[]", "null", "{}", "", "{\(base),\"payload\":{},\"seq\":7} x", "\u{FEFF}{\(base),\"payload\":{},\"seq\":7}",
        ]
    }()

    @Test("awkward, hostile and randomly mutated records get JSONDecoder's verdict")
    func awkwardRecords() throws {
        for text in Self.awkward { expectSameVerdict(Array(text.utf8)) }
        for value in HostileRecords.shapeless() { expectSameVerdict(value) }
        let sources = try Self.events(60).map { try SequencedEventJSON.value($0) }
        for value in HostileRecords.mutated(sources, count: 3000) { expectSameVerdict(value) }
    }
}
