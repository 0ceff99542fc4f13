import Foundation

/// Record values no consumer can accept, for tests that produce them straight to a topic:
/// bytes that are not JSON, JSON of the wrong shape, and a valid record's JSON with one field
/// made absurd (wrong type, over-long or huge or control-laden identifier, numbers that
/// overflow or are not numbers at all).
public enum HostileRecords {
    /// Values that are poison whatever the topic's contract.
    public static func shapeless(seed: UInt64 = 15) -> [[UInt8]] {
        var rng = SplitMix64(state: seed)
        let random = (0..<3).map { _ in (0..<64).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        let texts = [
            "", "not json", "{", "[]", "[1,2,3]", "\"a string\"", "null", "42", "{}", #"{"foo":1,"bar":[true]}"#,
            #"{"schemaVersion":NaN}"#, #"{"schemaVersion":Infinity}"#, #"{"schemaVersion":1e400}"#,
            #"{"schemaVersion":9223372036854775808}"#, #"{"schemaVersion":-9223372036854775809}"#,
        ]
        return random + [[0xFF, 0xFE, 0x00, 0x7B]] + texts.map { Array($0.utf8) }
    }

    /// `valid` (a JSON object's text) with `field` replaced by each absurd value: the field
    /// must be one whose absurd values the consumer refuses (an identifier or required field).
    public static func absurdField(_ field: String, in valid: String) throws -> [[UInt8]] {
        let replacements: [Any] = [
            String(repeating: "x", count: 300), String(repeating: "y", count: 200_000), "", "a\u{0}b", "a\nb", "two words",
            1e300, -1, NSNumber(value: UInt64.max), [1, 2], ["nested": true], NSNull(), true,
        ]
        var values: [[UInt8]] = []
        for replacement in replacements {
            guard var object = try JSONSerialization.jsonObject(with: Data(valid.utf8)) as? [String: Any] else {
                throw CocoaError(.coderInvalidValue)
            }
            object[field] = replacement
            values.append(Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
        }
        // Numbers JSONSerialization will not write: overflowing integers and out-of-range doubles.
        for number in ["9223372036854775808", "-9223372036854775809", "1e400"] {
            let marker = "\"__number__\""
            guard var object = try JSONSerialization.jsonObject(with: Data(valid.utf8)) as? [String: Any] else { continue }
            object[field] = "__number__"
            let text = String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
            values.append(Array(text.replacingOccurrences(of: marker, with: number).utf8))
        }
        return values
    }

    /// `count` values made from `sources` with one to three bytes deleted, inserted or changed at
    /// random (the inserted and changed bytes drawn from JSON's punctuation, digits and literals,
    /// a two-byte character's lead byte, NUL and DEL): mostly near-misses of valid records.
    public static func mutated(_ sources: [[UInt8]], count: Int) -> [[UInt8]] {
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]:,"\-+.0123456789eEnulltruefalse ab"#.utf8) + [0xC3, 0xA9, 0x00, 0x7F]
        return (0..<count).map { _ in
            var value = sources.randomElement(using: &rng)!
            for _ in 0..<Int.random(in: 1...3, using: &rng) where !value.isEmpty {
                let i = Int.random(in: 0..<value.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: value.remove(at: i)
                case 1: value.insert(alphabet.randomElement(using: &rng)!, at: i)
                default: value[i] = alphabet.randomElement(using: &rng)!
                }
            }
            return value
        }
    }
}

/// The golden fixtures of `Tests/ContractsTests/Fixtures`, for suites that start from a valid record.
public enum GoldenFixture {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../ContractsTests/Fixtures")

    /// A valid `reading.events.v2` record value.
    public static func readingEventRecord() throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent("reading-event-record.json")))
    }
}
