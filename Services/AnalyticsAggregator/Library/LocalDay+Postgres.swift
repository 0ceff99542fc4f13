import Postgres

/// A `LocalDay` as a Postgres `date`, in the text the connections use (`DateStyle = ISO`):
/// `YYYY-MM-DD`, a year of more digits after 9999, and ` BC` after the year for years before 1
/// (1 BC is year 0 of the proleptic calendar). The read model binds its windows' bounds and
/// reads its days as plain `date` columns, so its statements compute nothing per row.
extension LocalDay: PostgresDecodable, PostgresBindable {
    public static func decode(postgresText text: String) -> LocalDay? {
        var text = text
        return text.withUTF8 { bytes -> LocalDay? in
            var end = bytes.count
            let beforeChrist = end > 3 && bytes[end - 3] == UInt8(ascii: " ") && bytes[end - 2] == UInt8(ascii: "B")
                && bytes[end - 1] == UInt8(ascii: "C")
            if beforeChrist { end -= 3 }
            guard end >= 10, bytes[end - 3] == UInt8(ascii: "-"), bytes[end - 6] == UInt8(ascii: "-") else { return nil }
            func number(_ from: Int, _ to: Int) -> Int? {
                guard to - from <= 9 else { return nil }
                var value = 0
                for index in from..<to {
                    let digit = bytes[index] &- UInt8(ascii: "0")
                    guard digit < 10 else { return nil }
                    value = value * 10 + Int(digit)
                }
                return value
            }
            guard let written = number(0, end - 6), let month = number(end - 5, end - 3), let day = number(end - 2, end),
                  end - 6 >= 4, (1...12).contains(month) else { return nil }
            let year = beforeChrist ? 1 - written : written
            guard (1...Self.daysIn(month: month, year: year)).contains(day) else { return nil }
            return LocalDay(year: year, month: month, day: day)
        }
    }

    public var postgresText: String? {
        let (year, month, day) = civil
        guard year < 1 else { return description }
        let digits = String(1 - year)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "-" + (month < 10 ? "0" : "") + String(month)
            + "-" + (day < 10 ? "0" : "") + String(day) + " BC"
    }
}
