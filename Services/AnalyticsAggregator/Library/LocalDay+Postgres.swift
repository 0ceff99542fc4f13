import Postgres

/// A `LocalDay` as a Postgres `date` (`CivilCalendar`'s text of it, ` BC` for years before 1).
/// The read model binds its windows' bounds and reads its days as plain `date` columns, so its
/// statements compute nothing per row.
extension LocalDay: PostgresDecodable, PostgresBindable {
    public static func decode(postgresText text: String) -> LocalDay? {
        CivilCalendar.date(postgresText: text).map { LocalDay(year: $0.year, month: $0.month, day: $0.day) }
    }

    public var postgresText: String? {
        let (year, month, day) = civil
        return year < 1 ? CivilCalendar.postgresText(year: year, month: month, day: day) : description
    }
}
