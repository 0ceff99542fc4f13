@testable import AnalyticsAggregator
import Foundation
import Testing

@Suite("Local days")
struct LocalDayTests {
    @Test("days print and parse as YYYY-MM-DD, including leap days and dates before 1970")
    func formatting() {
        #expect(LocalDay(number: 0).description == "1970-01-01")
        #expect(LocalDay(2024, 2, 29).description == "2024-02-29")
        #expect(LocalDay(1969, 12, 31).number == -1)
        #expect(LocalDay("2026-11-30") == LocalDay(2026, 11, 30))
        #expect(LocalDay("2026-02-29") == nil)
        #expect(LocalDay("2026-1-30") == nil)
        for number in stride(from: LocalDay(1, 1, 1).number, through: LocalDay(9999, 12, 31).number, by: 977) {
            let day = LocalDay(number: number)
            #expect(LocalDay(day.description) == day)
        }
    }

    @Test("every day of years 0…9999 prints as the zero-padded civil date")
    func formattingMatchesCivilDate() {
        var mismatches = 0
        for number in LocalDay(0, 1, 1).number...LocalDay(9999, 12, 31).number {
            let day = LocalDay(number: number)
            let (y, m, d) = day.civil
            if day.description != String(format: "%04d-%02d-%02d", y, m, d) { mismatches += 1 }
        }
        #expect(mismatches == 0)
        #expect(LocalDay(10_000, 1, 1).description == "10000-01-01")
    }

    @Test("an event at 23:59 local and one at 00:01 the next morning land on different days")
    func midnight() {
        for offset in [0, 480, -300, 840, -720, 345] {
            let user = EventFactory(offsetMinutes: offset)
            let late = LocalDay(instant: user.instant(2026, 3, 9, 23, 59), offsetMinutes: offset)
            let early = LocalDay(instant: user.instant(2026, 3, 10, 0, 1), offsetMinutes: offset)
            #expect(late == LocalDay(2026, 3, 9), "offset \(offset)")
            #expect(early == LocalDay(2026, 3, 10), "offset \(offset)")
        }
    }

    @Test("the same instant is a different local day for a UTC+14 and a UTC−12 user")
    func extremeOffsets() {
        let instant = ISO8601DateFormatter().date(from: "2026-06-15T11:30:00Z")!
        #expect(LocalDay(instant: instant, offsetMinutes: 840).description == "2026-06-16")
        #expect(LocalDay(instant: instant, offsetMinutes: -720).description == "2026-06-14")
        #expect(LocalDay(instant: instant, offsetMinutes: 0).description == "2026-06-15")
    }

    @Test("weeks start on Monday")
    func weeks() {
        #expect(LocalDay(2026, 11, 30).weekdayFromMonday == 0)  // a Monday
        #expect(LocalDay(2026, 12, 6).startOfWeek == LocalDay(2026, 11, 30))  // Sunday
        #expect(LocalDay(2026, 11, 30).startOfWeek == LocalDay(2026, 11, 30))
        #expect(LocalDay(1969, 12, 28).startOfWeek == LocalDay(1969, 12, 22))
    }
}
