import Contracts
import Foundation
import Testing

/// An upload encoded by Foundation's `JSONEncoder` under each date strategy a Swift client may
/// choose (`Fixtures/generate-date-strategy-fixtures.swift` wrote them) names one instant.
@Suite("Timestamps under every JSONEncoder date strategy")
struct DateStrategyFixtureTests {
    static let instant = Date(timeIntervalSince1970: 1_796_026_545.125)

    static func timestamp(_ strategy: String) throws -> RawReadingEvent.Timestamp {
        let events = try RawReadingEvent.parseBatch(GoldenFixtureTests.bytes("reading-event-upload.date-\(strategy).json"))
        return try #require(events.first?.clientTimestamp.value)
    }

    @Test("each form is read as the same instant inside the accepted window",
          arguments: ["deferredToDate", "secondsSince1970", "millisecondsSince1970", "iso8601"])
    func sameInstant(strategy: String) throws {
        let timestamp = try Self.timestamp(strategy)
        let now = Self.instant.addingTimeInterval(60)
        let date = try #require(timestamp.date(near: now, ahead: 600, behind: 30 * 86_400))
        // ISO-8601 from JSONEncoder drops the fraction.
        #expect(abs(date.timeIntervalSince(Self.instant)) < (strategy == "iso8601" ? 1 : 0.0005))
    }

    @Test("a number that lands outside the window in every form is refused, at either end of the window")
    func outsideWindow() throws {
        let seconds = try Self.timestamp("secondsSince1970")
        #expect(seconds.date(near: Self.instant.addingTimeInterval(31 * 86_400), ahead: 600, behind: 30 * 86_400) == nil)
        #expect(seconds.date(near: Self.instant.addingTimeInterval(-601), ahead: 600, behind: 30 * 86_400) == nil)
        #expect(seconds.date(near: Self.instant.addingTimeInterval(-599), ahead: 600, behind: 30 * 86_400) != nil)
    }

    @Test("numbers beyond any representable instant are refused, never trapped on")
    func extremeNumbers() {
        for value in [1e300, -1e300, Double.greatestFiniteMagnitude, 9.3e18] {
            #expect(RawReadingEvent.Timestamp.number(value).date == nil)
            #expect(RawReadingEvent.Timestamp.number(value).date(near: Self.instant, ahead: 600, behind: 86_400) == nil)
        }
        #expect(ContractCoding.formatTimestamp(Date(timeIntervalSince1970: 1e300)) == "9999-12-31T23:59:59.999Z")
        #expect(ContractCoding.formatTimestamp(Date(timeIntervalSince1970: .nan)) == "1970-01-01T00:00:00.000Z")
    }
}
