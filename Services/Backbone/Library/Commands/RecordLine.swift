import Contracts
import Foundation
import JSON
import Kafka
import ServiceLogging

/// One Kafka record as a JSON line — the format `tail` and `dump` print and `republish` reads:
///
///     {"topic":"t","partition":0,"offset":12,"timestamp":"2026-11-30T08:15:30.123Z","key":"u1","value":{…}}
///
/// A value that is a JSON object or array is inlined byte for byte (so `republish` sends the
/// very same bytes back); any other UTF-8 value is a JSON string; bytes that are not UTF-8 are
/// base64 with `"valueEncoding":"base64"` (likewise `"keyEncoding"` for keys). A missing key
/// is `null`. Timestamps are ISO-8601 UTC with milliseconds, or `null`. A record of a trace
/// shows its `traceparent` header (`republish` does not send it again: a resend is new work).
struct RecordLine: Equatable {
    var topic: String
    var key: [UInt8]?
    var value: [UInt8]

    /// The line for `record`, without the trailing newline.
    static func encode(_ record: KafkaConsumerRecord) -> [UInt8] {
        var line = "{\"topic\":\(JSONString.quote(record.topic)),\"partition\":\(record.partition),\"offset\":\(record.offset)"
        line += ",\"timestamp\":" + (record.timestamp.map { "\"\(ContractCoding.formatTimestamp($0))\"" } ?? "null")
        if let trace = record.trace { line += ",\"traceparent\":\"\(trace.traceparent)\"" }
        line += ",\"key\":"
        if let key = record.key {
            let (text, base64) = stringForm(key)
            line += text + (base64 ? ",\"keyEncoding\":\"base64\"" : "")
        } else {
            line += "null"
        }
        line += ",\"value\":"
        var bytes = Array(line.utf8)
        if isInlinableJSON(record.value) {
            bytes += record.value
            bytes += Array("}".utf8)
        } else {
            let (text, base64) = stringForm(record.value)
            bytes += Array((text + (base64 ? ",\"valueEncoding\":\"base64\"" : "") + "}").utf8)
        }
        return bytes
    }

    /// Parses one line. `lineNumber` only goes into the error.
    static func decode(_ line: ArraySlice<UInt8>, lineNumber: Int) throws -> RecordLine {
        func malformed(_ why: String) -> CommandError {
            CommandError(code: .malformedInput, message: why, context: "line \(lineNumber)")
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any] else {
            throw malformed("not a JSON object")
        }
        guard let topic = object["topic"] as? String, !topic.isEmpty else { throw malformed("\"topic\" must be a non-empty string") }
        let key: [UInt8]?
        switch object["key"] {
        case nil, is NSNull: key = nil
        case let text as String: key = try bytes(of: text, encoding: object["keyEncoding"], field: "key", malformed: malformed)
        default: throw malformed("\"key\" must be a string or null")
        }
        let value: [UInt8]
        switch object["value"] {
        case nil, is NSNull: value = []
        case let text as String: value = try bytes(of: text, encoding: object["valueEncoding"], field: "value", malformed: malformed)
        case is [String: Any], is [Any]:
            guard let span = JSONMemberScanner.rawValue(of: "value", in: line) else {
                throw malformed("\"value\" must be written as a plain member name")
            }
            value = Array(span)
        default: throw malformed("\"value\" must be a JSON object, array, string or null")
        }
        return RecordLine(topic: topic, key: key, value: value)
    }

    /// JSON objects and arrays on one line with no surrounding whitespace are inlined: they
    /// come back byte-identical. Scalars are not (`"x"` would come back as `x`).
    static func isInlinableJSON(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.first, let last = bytes.last,
              (first == UInt8(ascii: "{") && last == UInt8(ascii: "}")) || (first == UInt8(ascii: "[") && last == UInt8(ascii: "]")),
              !bytes.contains(where: { $0 == 0x0A || $0 == 0x0D }) else { return false }
        return (try? JSONSerialization.jsonObject(with: Data(bytes))) != nil
    }

    private static func stringForm(_ bytes: [UInt8]) -> (text: String, base64: Bool) {
        if let text = String(validating: bytes, as: UTF8.self) { return (JSONString.quote(text), false) }
        return ("\"" + Data(bytes).base64EncodedString() + "\"", true)
    }

    private static func bytes(of text: String, encoding: Any?, field: String,
                              malformed: (String) -> CommandError) throws -> [UInt8] {
        switch encoding {
        case nil, is NSNull:
            return Array(text.utf8)
        case let name as String where name == "base64":
            guard let data = Data(base64Encoded: text) else { throw malformed("\"\(field)\" is not valid base64") }
            return Array(data)
        default:
            throw malformed("\"\(field)Encoding\" must be \"base64\"")
        }
    }
}
