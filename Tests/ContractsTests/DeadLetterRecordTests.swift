import Contracts
import Foundation
import Testing

/// A dead letter keeps the original key and value byte for byte, so a replay produces them
/// to the same partition as the original.
@Suite("Dead-letter records")
struct DeadLetterRecordTests {
    static func letter(key: [UInt8]?, value: [UInt8]) -> DeadLetterRecord {
        DeadLetterRecord(originalTopic: "reading.events.v2", partition: 3, offset: 42, consumerGroup: "g", error: "bad",
                         key: key, value: value, failedAt: Date(timeIntervalSince1970: 1_790_000_000))
    }

    @Test("keys and values that are not UTF-8 are base64 with their encoding named, and come back byte for byte through JSON")
    func bytesRoundTrip() throws {
        let binary: [UInt8] = [0xFF, 0x00, 0xC3, 0x28, 0x80]
        for (key, value) in [(Array("user-1".utf8), Array("{\"a\":1}".utf8)), (binary, binary), (nil, []), (Array("中文".utf8), binary)] {
            let letter = Self.letter(key: key, value: value)
            let decoded = try ContractCoding.decode(DeadLetterRecord.self, from: try ContractCoding.encode(letter))
            #expect(decoded.keyOriginal == key)
            #expect(decoded.valueOriginal == value)
        }
        let binaryKey = Self.letter(key: binary, value: [])
        #expect(binaryKey.keyEncoding == "base64" && binaryKey.key == Data(binary).base64EncodedString())
        let textKey = Self.letter(key: Array("user-1".utf8), value: [])
        #expect(textKey.keyEncoding == nil && textKey.key == "user-1")
        let json = String(decoding: try ContractCoding.encode(textKey), as: UTF8.self)
        #expect(!json.contains("keyEncoding"), "a UTF-8 key is written as before: \(json)")
    }

    @Test("a record written before keyEncoding existed decodes, its key taken as UTF-8 text")
    func olderRecord() throws {
        let json = """
            {"schemaVersion":1,"originalTopic":"t","partition":0,"offset":1,"consumerGroup":"g","error":"e",
             "key":"user-1","value":"x","valueEncoding":"utf8","failedAt":"2026-09-21T12:26:40.000Z"}
            """
        let letter = try ContractCoding.decode(DeadLetterRecord.self, from: Array(json.utf8))
        #expect(letter.keyOriginal == Array("user-1".utf8))
        #expect(letter.valueOriginal == Array("x".utf8))
    }
}
