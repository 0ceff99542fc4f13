import Foundation

/// Where `tail` starts in each partition.
enum StartPosition: Equatable {
    case beginning
    case end
    /// The same offset in every partition (clamped to what the partition holds).
    case offset(Int64)
    /// The first record at or after this time.
    case time(Date)

    /// `beginning`, `end`, a whole number (an offset) or an ISO-8601 time.
    init?(argument: String) {
        switch argument {
        case "beginning", "earliest": self = .beginning
        case "end", "latest": self = .end
        default:
            if let offset = Int64(argument), offset >= 0 {
                self = .offset(offset)
            } else if let date = ISO8601Time.parse(argument) {
                self = .time(date)
            } else {
                return nil
            }
        }
    }
}

/// ISO-8601 times for `--from`: with or without fractional seconds, `Z` or an offset, or a
/// plain date (midnight UTC).
enum ISO8601Time {
    static func parse(_ text: String) -> Date? {
        let full = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        let plain = Date.ISO8601FormatStyle()
        if let date = try? full.parse(text) { return date }
        if let date = try? plain.parse(text) { return date }
        if text.count == 10, let date = try? Date.ISO8601FormatStyle().year().month().day().parse(text) { return date }
        return nil
    }
}
