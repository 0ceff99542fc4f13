import Contracts

/// The body of `GET /activity/heatmap`, written straight from the days: byte for byte what
/// `LearningFigures.heatmap(_:today:count:).json` writes (`HeatmapBodyTests`), without the
/// response's `String` per day and the writer's call per member — a year is 365 objects per
/// request, and building and writing them was the largest share of the endpoint's own CPU.
/// The days of a window within years 0…9999 are written into one buffer sized for the longest
/// body, each day's date stepped from the one before (`LocalDay.civil` was 4 % of the
/// endpoint's samples, the generic `Array.append(contentsOf:)` 6 %).
public enum HeatmapBody {
    public static func json(_ days: [DailyActivity], today: LocalDay, count: Int) -> [UInt8] {
        let window = LearningFigures.window(endingAt: today, count: count)
        var (year, month, date) = window.lowerBound.civil
        // Years outside 0…9999 (their days written as `LocalDay.description`): the contract's own
        // encoding, which this writer matches byte for byte.
        guard year >= 0, today.civil.year <= 9999 else { return LearningFigures.heatmap(days, today: today, count: count).json }
        var seconds = [Int](repeating: 0, count: window.upperBound - window.lowerBound + 1)
        for day in days where window.contains(day.day) { seconds[day.day - window.lowerBound] += day.activeSeconds }
        // At most 68 bytes a day: the members' names, a day, a level, a 20-character Int.
        return [UInt8](unsafeUninitializedCapacity: 12 + seconds.count * 68) { buffer, initialized in
            var out = Cursor(base: buffer.baseAddress!)
            out.put("{\"days\":[")
            for (index, value) in seconds.enumerated() {
                out.put(index == 0 ? "{\"activeSeconds\":" : ",{\"activeSeconds\":")
                out.put(value)
                out.put(",\"day\":\"")
                out.putDay(year, month, date)
                out.put("\",\"level\":")
                out.put(ActivityHeatmapResponse.level(forSeconds: value))
                out.put(UInt8(ascii: "}"))
                // The next day, without the era arithmetic of `LocalDay.civil` per day.
                date += 1
                if date > LocalDay.daysIn(month: month, year: year) {
                    date = 1
                    month += 1
                    if month > 12 { month = 1; year += 1 }
                }
            }
            out.put("]}")
            initialized = out.at
        }
    }

    /// Writes into memory the caller sized for the body.
    struct Cursor {
        let base: UnsafeMutablePointer<UInt8>
        var at = 0

        mutating func put(_ text: StaticString) {
            (base + at).update(from: text.utf8Start, count: text.utf8CodeUnitCount)
            at += text.utf8CodeUnitCount
        }

        mutating func put(_ byte: UInt8) {
            base[at] = byte
            at += 1
        }

        /// Decimal digits, as `String(value)` writes them.
        mutating func put(_ value: Int) {
            if value < 0 { put(UInt8(ascii: "-")) }
            var magnitude = value.magnitude, length = 1
            while magnitude >= 10 { magnitude /= 10; length += 1 }
            magnitude = value.magnitude
            var end = at + length
            at = end
            repeat {
                end -= 1
                base[end] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
        }

        /// `YYYY-MM-DD` of a year in 0…9999.
        mutating func putDay(_ year: Int, _ month: Int, _ date: Int) {
            let zero = UInt8(ascii: "0")
            base[at] = zero + UInt8(year / 1000)
            base[at + 1] = zero + UInt8(year / 100 % 10)
            base[at + 2] = zero + UInt8(year / 10 % 10)
            base[at + 3] = zero + UInt8(year % 10)
            base[at + 4] = UInt8(ascii: "-")
            base[at + 5] = zero + UInt8(month / 10)
            base[at + 6] = zero + UInt8(month % 10)
            base[at + 7] = UInt8(ascii: "-")
            base[at + 8] = zero + UInt8(date / 10)
            base[at + 9] = zero + UInt8(date % 10)
            at += 10
        }
    }
}
