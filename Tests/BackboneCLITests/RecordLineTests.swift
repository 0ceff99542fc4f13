@testable import BackboneCLI
import Foundation
import Kafka
import Testing

@Suite("JSON lines of records")
struct RecordLineTests {
    func record(key: [UInt8]?, value: [UInt8], timestamp: Date? = Date(timeIntervalSince1970: 1_790_000_000.123)) -> KafkaConsumerRecord {
        KafkaConsumerRecord(topic: "t.v1", partition: 2, offset: 41, key: key, value: value, timestamp: timestamp, headers: [])
    }

    func roundTrip(_ original: KafkaConsumerRecord) throws -> RecordLine {
        try RecordLine.decode(ArraySlice(RecordLine.encode(original)), lineNumber: 1)
    }

    @Test("a JSON object value is inlined as JSON and comes back byte for byte")
    func inlinesJSON() throws {
        let value = Array(#"{"b": 1,  "a":[true,null,"x\"}"], "c":{"d":"é"}}"#.utf8)
        let line = String(decoding: RecordLine.encode(record(key: Array("u1".utf8), value: value)), as: UTF8.self)
        #expect(line.hasPrefix(#"{"topic":"t.v1","partition":2,"offset":41,"timestamp":"2026-09-21T"#))
        #expect(line.hasSuffix(#","key":"u1","value":{"b": 1,  "a":[true,null,"x\"}"], "c":{"d":"é"}}}"#))
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        #expect((object?["value"] as? [String: Any])?["b"] as? Int == 1)
        #expect(try roundTrip(record(key: Array("u1".utf8), value: value)) == RecordLine(topic: "t.v1", key: Array("u1".utf8), value: value))
    }

    @Test("text, JSON scalars, multi-line JSON and binary values survive the round trip")
    func otherValues() throws {
        let values: [[UInt8]] = [
            Array("plain text\twith \"quotes\"\n".utf8), Array(#""a JSON string""#.utf8), Array("42".utf8), Array("null".utf8),
            Array("{\n  \"pretty\": true\n}".utf8), [0xFF, 0x00, 0xC3, 0x28], [], Array(" [1] ".utf8),
        ]
        for value in values {
            for key in [nil, Array("k".utf8), [0xFE, 0x01]] as [[UInt8]?] {
                #expect(try roundTrip(record(key: key, value: value, timestamp: nil)) == RecordLine(topic: "t.v1", key: key, value: value))
            }
        }
        let binary = String(decoding: RecordLine.encode(record(key: [0xFE], value: [0xFF])), as: UTF8.self)
        #expect(binary.contains(#""keyEncoding":"base64""#) && binary.contains(#""valueEncoding":"base64""#))
    }

    @Test("malformed lines are rejected with their line number")
    func malformed() {
        for text in ["not json", #"{"key":"k","value":"v"}"#, #"{"topic":"t","key":5,"value":"v"}"#,
                     #"{"topic":"t","value":"%%","valueEncoding":"base64"}"#, #"{"topic":"t","value":"v","valueEncoding":"hex"}"#,
                     #"{"topic":"t","value":12}"#, "[1,2]"] {
            #expect(throws: CommandError.self) { try RecordLine.decode(ArraySlice(Array(text.utf8)), lineNumber: 7) }
            do {
                _ = try RecordLine.decode(ArraySlice(Array(text.utf8)), lineNumber: 7)
            } catch let error as CommandError {
                #expect(error.description.hasPrefix("line 7: "))
            } catch {}
        }
    }

    @Test("the scanner finds a member's raw bytes whatever precedes it")
    func scanner() {
        let text = Array(#" { "a" : {"value": [1]} , "s":"va\"lue\\", "value" :  [ 1 , {"x":"]"} ] , "z":null}"#.utf8)
        let span = JSONMemberScanner.rawValue(of: "value", in: ArraySlice(text))
        #expect(span.map { String(decoding: $0, as: UTF8.self) } == #"[ 1 , {"x":"]"} ]"#)
        #expect(JSONMemberScanner.rawValue(of: "missing", in: ArraySlice(text)) == nil)
    }

    @Test("--from accepts beginning, end, offsets and ISO-8601 times")
    func startPositions() {
        #expect(StartPosition(argument: "beginning") == .beginning)
        #expect(StartPosition(argument: "end") == .end)
        #expect(StartPosition(argument: "17") == .offset(17))
        #expect(StartPosition(argument: "2026-11-30T08:15:30Z") == .time(Date(timeIntervalSince1970: 1_796_026_530)))
        #expect(StartPosition(argument: "2026-11-30T09:15:30.500+01:00") == .time(Date(timeIntervalSince1970: 1_796_026_530.5)))
        #expect(StartPosition(argument: "2026-11-30") == .time(Date(timeIntervalSince1970: 1_795_996_800)))
        #expect(StartPosition(argument: "-3") == nil)
        #expect(StartPosition(argument: "yesterday") == nil)
    }
}
