import Foundation

/// Text conversion between `Date` and Postgres timestamps, with microsecond precision.
///
/// Connections run with `DateStyle = ISO` and `TimeZone = UTC`, but offsets in the text
/// (`+05:30`, `-08`) are honoured either way.
enum PostgresTimestamp {
    /// `2026-01-02T03:04:05.123456Z`.
    static func format(_ date: Date) -> String {
        let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        let (seconds, fraction) = floorDivide(micros, 1_000_000)
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let (year, month, day) = civil(fromDays: days)
        let hour = secondOfDay / 3600, minute = secondOfDay % 3600 / 60, second = secondOfDay % 60
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(hour, 2) + ":" + pad(minute, 2)
            + ":" + pad(second, 2) + "." + pad(fraction, 6) + "Z"
    }

    /// Appends `format(date)`'s bytes without building the string (years 0…9999).
    static func append(_ date: Date, to bytes: inout [UInt8]) {
        let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        let (seconds, fraction) = floorDivide(micros, 1_000_000)
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let (year, month, day) = civil(fromDays: days)
        guard (0...9999).contains(year) else {
            bytes.append(contentsOf: format(date).utf8)
            return
        }
        func digits(_ value: Int64, _ width: Int) { PostgresCopyRows.appendDecimal(value, minimumDigits: width, to: &bytes) }
        digits(year, 4); bytes.append(UInt8(ascii: "-")); digits(month, 2); bytes.append(UInt8(ascii: "-")); digits(day, 2)
        bytes.append(UInt8(ascii: "T"))
        digits(secondOfDay / 3600, 2); bytes.append(UInt8(ascii: ":")); digits(secondOfDay % 3600 / 60, 2)
        bytes.append(UInt8(ascii: ":")); digits(secondOfDay % 60, 2); bytes.append(UInt8(ascii: "."))
        digits(fraction, 6); bytes.append(UInt8(ascii: "Z"))
    }

    /// Parses `YYYY-MM-DD[ HH:MM:SS[.ffffff]][±HH[:MM[:SS]]]`, `infinity`, `-infinity`.
    static func parse(_ text: String) -> Date? {
        if text == "infinity" { return .distantFuture }
        if text == "-infinity" { return .distantPast }
        var scanner = DigitScanner(Array(text.utf8))
        guard let (year, month, day) = scanner.date() else { return nil }
        var seconds = days(fromCivil: year, month, day) * 86_400
        var micros: Int64 = 0
        if scanner.skip(" ") || scanner.skip("T") {
            guard let hour = scanner.number(digits: 2...2), scanner.skip(":"),
                  let minute = scanner.number(digits: 2...2), scanner.skip(":"),
                  let second = scanner.number(digits: 2...2) else { return nil }
            seconds += hour * 3600 + minute * 60 + second
            if scanner.skip(".") {
                let start = scanner.index
                guard let fraction = scanner.number(digits: 1...9) else { return nil }
                let count = scanner.index - start
                var scaled = fraction
                if count < 6 { for _ in count..<6 { scaled *= 10 } }
                if count > 6 { for _ in 6..<count { scaled /= 10 } }
                micros = scaled
            }
            if let sign = scanner.sign() {
                guard let offsetHours = scanner.number(digits: 2...2) else { return nil }
                var offset = offsetHours * 3600
                if scanner.skip(":") {
                    guard let offsetMinutes = scanner.number(digits: 2...2) else { return nil }
                    offset += offsetMinutes * 60
                    if scanner.skip(":") {
                        guard let offsetSeconds = scanner.number(digits: 2...2) else { return nil }
                        offset += offsetSeconds
                    }
                }
                seconds -= sign * offset
            } else {
                _ = scanner.skip("Z")
            }
        }
        guard scanner.atEnd else { return nil }
        return Date(timeIntervalSince1970: Double(seconds) + Double(micros) / 1_000_000)
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        let q = a / b, r = a % b
        return r < 0 ? (q - 1, r + b) : (q, r)
    }

    /// Days since 1970-01-01 for a proleptic Gregorian date.
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        Int64(CivilCalendar.days(year: Int(year), month: Int(month), day: Int(day)))
    }

    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let (year, month, day) = CivilCalendar.date(ofDay: Int(days))
        return (Int64(year), Int64(month), Int64(day))
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

/// A tiny cursor over ASCII digits and punctuation.
struct DigitScanner {
    let bytes: [UInt8]
    var index = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    mutating func skip(_ character: Unicode.Scalar) -> Bool {
        guard index < bytes.count, bytes[index] == UInt8(character.value) else { return false }
        index += 1
        return true
    }

    mutating func sign() -> Int64? {
        if skip("+") { return 1 }
        if skip("-") { return -1 }
        return nil
    }

    mutating func number(digits allowed: ClosedRange<Int>) -> Int64? {
        var value: Int64 = 0
        let start = index
        while index < bytes.count, index - start < allowed.upperBound,
              (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
            value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
            index += 1
        }
        return allowed.contains(index - start) ? value : nil
    }

    /// `YYYY-MM-DD`, the date at the start of a `date` or `timestamp` text: a year of 4 to 9
    /// digits, a month 1…12 and a day 1…31.
    mutating func date() -> (year: Int64, month: Int64, day: Int64)? {
        guard let year = number(digits: 4...9), skip("-"), let month = number(digits: 2...2), skip("-"),
              let day = number(digits: 2...2), (1...12).contains(month), (1...31).contains(day) else { return nil }
        return (year, month, day)
    }
}
