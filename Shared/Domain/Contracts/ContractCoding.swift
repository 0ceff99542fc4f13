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

    /// The same encoding with snake_case keys: the answers of the CrowdRoom app's Edge Functions,
    /// whose fields the seed writes that way (`version_id`).
    public static let snakeCaseEncoder: JSONEncoder = {
        let snakeCase = JSONEncoder()
        snakeCase.outputFormatting = encoder.outputFormatting
        snakeCase.dateEncodingStrategy = encoder.dateEncodingStrategy
        snakeCase.keyEncodingStrategy = .convertToSnakeCase
        return snakeCase
    }()

    public static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let c = try decoder.singleValueContainer()
            // Strings first: they are what every service writes, and a failed attempt costs
            // far more than the parse.
            guard let text = try? c.decode(String.self) else {
                guard let date = Self.date(secondsSince1970: try c.decode(Double.self) / 1000) else {
                    throw DecodingError.dataCorruptedError(in: c, debugDescription: "epoch milliseconds out of range")
                }
                return date
            }
            guard let date = parseTimestamp(text) else {
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "not an ISO-8601 timestamp or epoch milliseconds")
            }
            return date
        }
        return decoder
    }()

    /// The same decoding of snake_case keys: the bodies of the CrowdRoom app's Edge Functions.
    public static let snakeCaseDecoder: JSONDecoder = {
        let snakeCase = JSONDecoder()
        snakeCase.dateDecodingStrategy = decoder.dateDecodingStrategy
        snakeCase.keyDecodingStrategy = .convertFromSnakeCase
        return snakeCase
    }()

    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] { Array(try encoder.encode(value)) }

    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try decoder.decode(T.self, from: Data(bytes))
    }

    /// `2026-11-30T08:15:30.123Z`, rounded to the nearest millisecond (so a timestamp that
    /// came in as epoch milliseconds goes out as the same milliseconds).
    public static func formatTimestamp(_ date: Date) -> String {
        var out = [UInt8]()
        out.reserveCapacity(24)
        appendTimestamp(date, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The instants a wire timestamp may name: years 0001 through 9999 (what ISO-8601 text
    /// and PostgreSQL's timestamptz both hold), in seconds since 1970.
    public static let timestampRange: ClosedRange<Double> = -62_135_596_800 ... 253_402_300_799.999

    /// The instant `seconds` after 1970-01-01, or nil when it is not finite or outside `timestampRange`.
    public static func date(secondsSince1970 seconds: Double) -> Date? {
        seconds.isFinite && timestampRange.contains(seconds) ? Date(timeIntervalSince1970: seconds) : nil
    }

    /// Appends `formatTimestamp(date)`'s UTF-8 to `out`. Instants outside `timestampRange`
    /// are written as its nearest end (no date can make this trap).
    public static func appendTimestamp(_ date: Date, to out: inout [UInt8]) {
        let interval = date.timeIntervalSince1970
        let clamped = interval.isNaN ? 0 : min(max(interval, timestampRange.lowerBound), timestampRange.upperBound)
        let millis = Int64((clamped * 1000).rounded())
        let (seconds, fraction) = millis.quotientAndRemainder(dividingBy: 1000)
        let whole = fraction < 0 ? seconds - 1 : seconds
        let ms = Int(fraction < 0 ? fraction + 1000 : fraction)
        var time = time_t(whole)
        var parts = tm()
        let year = gmtime_r(&time, &parts) == nil ? -1 : Int(parts.tm_year) + 1900
        guard (0...9999).contains(year) else {
            let text = String(Date(timeIntervalSince1970: Double(whole)).formatted(Date.ISO8601FormatStyle(timeZone: .gmt)).dropLast())
                + "." + String(1000 + ms).dropFirst() + "Z"
            out.append(contentsOf: text.utf8)
            return
        }
        func digits(_ value: Int, _ count: Int, then separator: UInt8) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
            out.append(separator)
        }
        digits(year, 4, then: UInt8(ascii: "-"))
        digits(Int(parts.tm_mon) + 1, 2, then: UInt8(ascii: "-"))
        digits(Int(parts.tm_mday), 2, then: UInt8(ascii: "T"))
        digits(Int(parts.tm_hour), 2, then: UInt8(ascii: ":"))
        digits(Int(parts.tm_min), 2, then: UInt8(ascii: ":"))
        digits(Int(parts.tm_sec), 2, then: UInt8(ascii: "."))
        digits(ms, 3, then: UInt8(ascii: "Z"))
    }

    /// ISO-8601 with or without fractional seconds, with `Z` or a numeric offset.
    /// `YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)` with every part in range — what every client
    /// and service writes — is read directly; anything else made of ISO-8601's characters and
    /// ending in a digit or `Z` goes to Foundation's parser (which by itself would take
    /// `…:00Zgarbage` or a trailing NUL).
    public static func parseTimestamp(_ text: String) -> Date? {
        if let date = text.utf8.withContiguousStorageIfAvailable(parseCanonical) ?? nil { return date }
        func isDigitOrZ(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 || byte == UInt8(ascii: "Z") || byte == UInt8(ascii: "z") }
        guard let last = text.utf8.last, isDigitOrZ(last),
              text.utf8.allSatisfy({ isDigitOrZ($0) || "-:+.Tt".utf8.contains($0) }) else { return nil }
        if text.utf8.contains(UInt8(ascii: ".")), let d = try? withFraction.parse(text) { return d }
        return try? withoutFraction.parse(text)
    }

    private static func parseCanonical(_ b: UnsafeBufferPointer<UInt8>) -> Date? {
        guard b.count >= 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"),
              b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":") else { return nil }
        func number(_ start: Int, _ count: Int) -> Int? {
            var value = 0
            for i in start..<start + count {
                let digit = b[i] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int(digit)
            }
            return value
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
              let minute = number(14, 2), let second = number(17, 2),
              (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
              hour < 24, minute < 60, second < 60 else { return nil }
        var i = 19
        var fraction = 0.0
        if b[i] == UInt8(ascii: ".") {
            let start = i + 1
            i = start
            while i < b.count, b[i] &- UInt8(ascii: "0") < 10 { i += 1 }
            guard i > start, i - start <= 9, let digits = number(start, i - start) else { return nil }
            var scale = 1.0
            for _ in start..<i { scale *= 10 }
            fraction = Double(digits) / scale
        }
        var offset = 0
        if i == b.count - 1, b[i] == UInt8(ascii: "Z") {
            offset = 0
        } else if i == b.count - 6, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-"), b[i + 3] == UInt8(ascii: ":"),
                  let h = number(i + 1, 2), let m = number(i + 4, 2), h < 24, m < 60 {
            offset = (h * 3600 + m * 60) * (b[i] == UInt8(ascii: "-") ? -1 : 1)
        } else {
            return nil
        }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        return Date(timeIntervalSince1970: Double(Int(timegm(&parts)) - offset) + fraction)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    private static let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let withoutFraction = Date.ISO8601FormatStyle()
}
