/// Proleptic Gregorian day counting (the calendar of Postgres `date` and `timestamp`): days
/// since 1970-01-01 to and from year, month and day, by 400-year eras, for any year.
public enum CivilCalendar {
    /// Days since 1970-01-01 (negative before) of a year, month (1…12) and day.
    public static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = floorDivide(y, 400)
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The year, month (1…12) and day of `days` since 1970-01-01.
    public static func date(ofDay days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = floorDivide(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// How many days `month` (1…12) of `year` has.
    public static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// A `date` in the text the connections read and write (`DateStyle = ISO`): `YYYY-MM-DD`, a
    /// year of more digits after 9999, and ` BC` after the year for years before 1 (1 BC is year
    /// 0); nil for any other text, or a day its month does not have.
    public static func date(postgresText text: String) -> (year: Int, month: Int, day: Int)? {
        var scanner = DigitScanner(Array(text.utf8))
        guard let (written, month, day) = scanner.date() else { return nil }
        let beforeChrist = scanner.skip(" ") && scanner.skip("B") && scanner.skip("C")
        guard scanner.atEnd else { return nil }
        let year = beforeChrist ? 1 - Int(written) : Int(written)
        guard day <= daysIn(month: Int(month), year: year) else { return nil }
        return (year, Int(month), Int(day))
    }

    /// The text `date(postgresText:)` reads, for a year before 1 (years from 1 on are
    /// `YYYY-MM-DD` as written).
    public static func postgresText(year: Int, month: Int, day: Int) -> String {
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let text = padded(year < 1 ? 1 - year : year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2)
        return year < 1 ? text + " BC" : text
    }

    private static func floorDivide(_ a: Int, _ b: Int) -> Int { a >= 0 ? a / b : -((-a + b - 1) / b) }
}
