import Contracts

/// The body of `GET /activity/heatmap`, written straight from the days: byte for byte what
/// `LearningFigures.heatmap(_:today:count:).json` writes (`HeatmapBodyTests`), without the
/// response's `String` per day and the writer's call per member — a year is 365 objects per
/// request, and building and writing them was the largest share of the endpoint's own CPU.
public enum HeatmapBody {
    public static func json(_ days: [DailyActivity], today: LocalDay, count: Int) -> [UInt8] {
        let filled = LearningFigures.filled(days, window: LearningFigures.window(endingAt: today, count: count))
        var bytes: [UInt8] = []
        bytes.reserveCapacity(12 + filled.count * 56)
        append("{\"days\":[", to: &bytes)
        for (index, (day, seconds)) in filled.enumerated() {
            append(index == 0 ? "{\"activeSeconds\":" : ",{\"activeSeconds\":", to: &bytes)
            appendInt(seconds, to: &bytes)
            append(",\"day\":\"", to: &bytes)
            appendDay(day, to: &bytes)
            append("\",\"level\":", to: &bytes)
            appendInt(ActivityHeatmapResponse.level(forSeconds: seconds), to: &bytes)
            bytes.append(UInt8(ascii: "}"))
        }
        append("]}", to: &bytes)
        return bytes
    }

    static func append(_ text: StaticString, to bytes: inout [UInt8]) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Decimal digits, as `String(value)` writes them.
    static func appendInt(_ value: Int, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = 20
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// `day.description`, without the `String`.
    static func appendDay(_ day: LocalDay, to bytes: inout [UInt8]) {
        let (year, month, date) = day.civil
        guard (0...9999).contains(year) else { return bytes.append(contentsOf: day.description.utf8) }
        let zero = UInt8(ascii: "0")
        bytes.append(zero + UInt8(year / 1000))
        bytes.append(zero + UInt8(year / 100 % 10))
        bytes.append(zero + UInt8(year / 10 % 10))
        bytes.append(zero + UInt8(year % 10))
        bytes.append(UInt8(ascii: "-"))
        bytes.append(zero + UInt8(month / 10))
        bytes.append(zero + UInt8(month % 10))
        bytes.append(UInt8(ascii: "-"))
        bytes.append(zero + UInt8(date / 10))
        bytes.append(zero + UInt8(date % 10))
    }
}
