import Foundation
import Postgres

/// A calendar day in some user's local time, as a count of days since 1970-01-01.
///
/// Every figure of the read model is keyed by the local day an event happened on:
/// its client timestamp shifted by its `clientTimezoneOffsetMinutes`. Days are stored as
/// `date` in Postgres and written as `YYYY-MM-DD` on the wire.
public struct LocalDay: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Days since 1970-01-01 (negative before).
    public var number: Int

    public init(number: Int) { self.number = number }

    /// The local day of `instant` for a user `offsetMinutes` east of UTC.
    public init(instant: Date, offsetMinutes: Int) {
        self.number = Self.floorDivide(Self.epochSeconds(instant) + offsetMinutes * 60, 86_400)
    }

    /// Whole seconds since 1970 of `instant`, rounded down (what the day of an instant is
    /// computed from, here and in the read model's SQL).
    public static func epochSeconds(_ instant: Date) -> Int { Int((instant.timeIntervalSince1970).rounded(.down)) }

    /// Parses `YYYY-MM-DD`.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
              (1...12).contains(month), (1...Self.daysIn(month: month, year: year)).contains(day) else { return nil }
        self.number = Self.days(year: year, month: month, day: day)
    }

    public init(year: Int, month: Int, day: Int) { self.number = Self.days(year: year, month: month, day: day) }

    /// `YYYY-MM-DD` (years outside 0…9999 as many digits as they take, `-` first if negative).
    public var description: String {
        let (year, month, day) = civil
        guard (0...9999).contains(year) else { return Self.pad(year, 4) + "-" + Self.pad(month, 2) + "-" + Self.pad(day, 2) }
        // The common case without intermediate strings: ten ASCII digits and dashes, which
        // a native string holds inline.
        return String(unsafeUninitializedCapacity: 10) { text in
            let zero = UInt8(ascii: "0")
            text[0] = zero + UInt8(year / 1000)
            text[1] = zero + UInt8(year / 100 % 10)
            text[2] = zero + UInt8(year / 10 % 10)
            text[3] = zero + UInt8(year % 10)
            text[4] = UInt8(ascii: "-")
            text[5] = zero + UInt8(month / 10)
            text[6] = zero + UInt8(month % 10)
            text[7] = UInt8(ascii: "-")
            text[8] = zero + UInt8(day / 10)
            text[9] = zero + UInt8(day % 10)
            return 10
        }
    }

    /// 0 for Monday … 6 for Sunday (1970-01-01 was a Thursday).
    public var weekdayFromMonday: Int { Self.floorModulo(number + 3, 7) }

    /// The Monday of this day's week.
    public var startOfWeek: LocalDay { LocalDay(number: number - weekdayFromMonday) }

    public static func < (lhs: LocalDay, rhs: LocalDay) -> Bool { lhs.number < rhs.number }
    public static func + (lhs: LocalDay, rhs: Int) -> LocalDay { LocalDay(number: lhs.number + rhs) }
    public static func - (lhs: LocalDay, rhs: Int) -> LocalDay { LocalDay(number: lhs.number - rhs) }
    public static func - (lhs: LocalDay, rhs: LocalDay) -> Int { lhs.number - rhs.number }

    // MARK: - Proleptic Gregorian arithmetic (era-based day counting)

    var civil: (year: Int, month: Int, day: Int) { CivilCalendar.date(ofDay: number) }

    static func days(year: Int, month: Int, day: Int) -> Int { CivilCalendar.days(year: year, month: month, day: day) }

    static func daysIn(month: Int, year: Int) -> Int { CivilCalendar.daysIn(month: month, year: year) }

    static func floorDivide(_ a: Int, _ b: Int) -> Int { a >= 0 ? a / b : -((-a + b - 1) / b) }
    static func floorModulo(_ a: Int, _ b: Int) -> Int { a - floorDivide(a, b) * b }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
