import Foundation

/// The JSON encoding of every wire type: camelCase keys, timestamps as ISO-8601 with
/// milliseconds in UTC on output; ISO-8601 (with or without fraction, any offset) or epoch
/// milliseconds accepted on input.
public enum ContractCoding {
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(formatTimestamp(date))
        }
        return encoder
    }()

    public static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let c = try decoder.singleValueContainer()
            // Strings first: they are what every service writes, and a failed attempt costs
            // far more than the parse.
            guard let text = try? c.decode(String.self) else {
                return Date(timeIntervalSince1970: try c.decode(Double.self) / 1000)
            }
            guard let date = parseTimestamp(text) else {
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "not an ISO-8601 timestamp or epoch milliseconds")
            }
            return date
        }
        return decoder
    }()

    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] { Array(try encoder.encode(value)) }

    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try decoder.decode(T.self, from: Data(bytes))
    }

    /// `2026-11-30T08:15:30.123Z`, rounded to the nearest millisecond (so a timestamp that
    /// came in as epoch milliseconds goes out as the same milliseconds).
    public static func formatTimestamp(_ date: Date) -> String {
        let millis = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let (seconds, fraction) = millis.quotientAndRemainder(dividingBy: 1000)
        let whole = fraction < 0 ? seconds - 1 : seconds
        let ms = fraction < 0 ? fraction + 1000 : fraction
        let base = Date(timeIntervalSince1970: Double(whole)).formatted(Date.ISO8601FormatStyle(timeZone: .gmt))
        let digits = String(ms)
        return String(base.dropLast()) + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }

    /// ISO-8601 with or without fractional seconds, with `Z` or a numeric offset.
    public static func parseTimestamp(_ text: String) -> Date? {
        if text.utf8.contains(UInt8(ascii: ".")), let d = try? withFraction.parse(text) { return d }
        return try? withoutFraction.parse(text)
    }

    private static let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let withoutFraction = Date.ISO8601FormatStyle()
}
