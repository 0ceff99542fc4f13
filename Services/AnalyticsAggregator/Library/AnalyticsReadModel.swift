import Contracts
import Foundation
import Postgres

/// Reads of the analytics tables for one user.
public struct AnalyticsReadModel: Sendable {
    let database: PostgresClient

    public init(database: PostgresClient) { self.database = database }

    /// What the summary is computed from: the user's today, the active days of the seven
    /// days ending today (the week so far lies within them), the streaks, the last active day and
    /// the material counts.
    public struct SummaryRows: Sendable {
        public var today: LocalDay
        public var days: [DailyActivity]
        public var currentStreakDays: Int
        public var longestStreakDays: Int
        public var lastActiveDay: LocalDay?
        public var materialsReadToday: Int
        public var materialsCompleted: Int
    }

    /// The user's local today at `now`, and the active seconds of the `count` local days
    /// ending today that have any event, in no particular order (the figures index them by
    /// day): one statement.
    ///
    /// "Today" is `LocalDay(instant: now, offsetMinutes:)` for `offsetMinutes`, or when that is
    /// `nil` for the offset of the user's latest event (UTC when they have none). With a `tz` the
    /// window is known and its days are one range scan; without, the user's offset is read with
    /// the days of the window of every today an offset can give (`todays`), and the days outside
    /// the user's own window are dropped here.
    public func window(user: String, count: Int, now: Date, offsetMinutes: Int?) async throws -> (today: LocalDay, days: [DailyActivity]) {
        let count = max(1, count)
        if let offsetMinutes {
            let today = LocalDay(instant: now, offsetMinutes: offsetMinutes)
            return (today, try await days(user: user, (today - (count - 1))...today))
        }
        let todays = Self.todays(now: now, offsetMinutes: nil)
        let rows = try await database.queryPrepared(Self.offsetAndDays, [user, todays.lowerBound - (count - 1), todays.upperBound])
        let today = LocalDay(instant: now, offsetMinutes: try Self.first(rows).decode(Int?.self, 0) ?? 0)
        return (today, try await days(rows, dayColumn: 1, user: user, in: (today - (count - 1))...today, read: todays))
    }

    /// `window`'s answer read from the months that hold the days (`ActivityMonths`): at most 13
    /// rows for the heatmap's year instead of a row per active day.
    public func heatmapWindow(user: String, count: Int, now: Date, offsetMinutes: Int?) async throws -> (today: LocalDay, days: [DailyActivity]) {
        try await ActivityMonths.window(database, user: user, count: count, now: now, offsetMinutes: offsetMinutes)
    }

    /// The rows of `GET /learning/summary` (today as in `window`), in one statement whatever the
    /// length of the user's history: the user's summary row (`UserSummary`, one point read) as it
    /// is stored, and the days of the seven ending today (one short range scan: without a `tz`,
    /// those of every today an offset can give, as in `window`). The figures follow here:
    ///
    /// - The current streak is the run holding today or yesterday — the latest run starting by
    ///   today, if it reaches yesterday — counted up to today: the row's latest run when it
    ///   starts by today, else (a today before it, from a `tz` west of the user's own) the runs
    ///   themselves, read then.
    /// - The materials read today: none when the row's latest day with materials is before today,
    ///   its count when it is today, else (a `tz` west of the user's own) the day's rows, read then.
    public func summary(user: String, now: Date, offsetMinutes: Int?) async throws -> SummaryRows {
        let todays = Self.todays(now: now, offsetMinutes: offsetMinutes)
        let rows = try await database.queryPrepared(Self.summaryRowAndDays, [user, todays.lowerBound - 6, todays.upperBound])
        let row = try Self.first(rows)
        let today = try LocalDay(instant: now, offsetMinutes: offsetMinutes ?? row.decode(Int?.self, 0) ?? 0)
        let days = try await days(rows, dayColumn: 8, user: user, in: (today - 6)...today, read: todays)

        var current = 0
        if let start = try row.decode(LocalDay?.self, 4), let end = try row.decode(LocalDay?.self, 5) {
            if start <= today {
                current = Self.currentStreak(start: start, end: end, today: today)
            } else if let run = try await database.queryPrepared(Self.latestRun, [user, today]).first {
                current = Self.currentStreak(start: try run.decode(LocalDay.self, 0), end: try run.decode(LocalDay.self, 1), today: today)
            }
        }
        var read = 0
        if let day = try row.decode(LocalDay?.self, 6), day >= today {
            read = day == today ? try row.decode(Int.self, 7)
                : try Self.first(try await database.queryPrepared(Self.materialsOfDay, [user, today])).decode(Int.self, 0)
        }
        return SummaryRows(today: today, days: days, currentStreakDays: current,
                           longestStreakDays: try row.decode(Int?.self, 3) ?? 0,
                           lastActiveDay: try row.decode(LocalDay?.self, 2),
                           materialsReadToday: read, materialsCompleted: try row.decode(Int?.self, 1) ?? 0)
    }

    /// The current streak of the run `start…end` (starting by today): its days up to today when
    /// it reaches yesterday, else none.
    static func currentStreak(start: LocalDay, end: LocalDay, today: LocalDay) -> Int {
        end >= today - 1 ? min(end, today) - start + 1 : 0
    }

    /// The todays at `now`: the one of `offsetMinutes`, else every one an offset in use on Earth
    /// (`AnalyticsProjection.offsetRange`, the offsets an event may carry) can give — two or three
    /// days, so a window read for all of them holds the user's own whatever their stored offset.
    static func todays(now: Date, offsetMinutes: Int?) -> ClosedRange<LocalDay> {
        if let offsetMinutes {
            let today = LocalDay(instant: now, offsetMinutes: offsetMinutes)
            return today...today
        }
        let offsets = AnalyticsProjection.offsetRange
        return LocalDay(instant: now, offsetMinutes: offsets.lowerBound)...LocalDay(instant: now, offsetMinutes: offsets.upperBound)
    }

    /// The user's row (`$1`), or NULLs when they have none, beside the rows of `table` (`r`) of
    /// the user with `key` in `$2…$3` (one NULL row when there are none): plain columns, two
    /// index scans, nothing computed per execution.
    static func userRowAnd(_ userColumns: String, _ columns: String, of table: String, key: String) -> String {
        """
        SELECT \(userColumns), \(columns)
        FROM (SELECT 1) AS one
        LEFT JOIN analytics_users u ON u.user_id = $1
        LEFT JOIN \(table) r ON r.user_id = $1 AND r.\(key) BETWEEN $2::date AND $3::date
        """
    }

    /// The user's offset and the days of `$2…$3` (`window` without a `tz`).
    static let offsetAndDays = userRowAnd("u.tz_offset_minutes", "r.day, r.active_seconds", of: "analytics_daily", key: "day")

    /// The summary row's columns as stored (`UserSummary`) and the days of `$2…$3`.
    static let summaryRowAndDays = userRowAnd("""
        u.tz_offset_minutes, u.materials_completed, u.last_active_day, u.longest_streak_days,
        u.last_run_start, u.last_run_end, u.materials_day, u.materials_day_count
        """, "r.day, r.active_seconds", of: "analytics_daily", key: "day")

    /// The days of user `$1` in `$2…$3`, oldest first.
    static let daysInRange = """
        SELECT day, active_seconds FROM analytics_daily WHERE user_id = $1 AND day BETWEEN $2::date AND $3::date ORDER BY day
        """

    /// The run of user `$1` starting latest by `$2` (the summary's today before the row's latest run).
    static let latestRun = """
        SELECT start_day, end_day FROM analytics_streak_runs WHERE user_id = $1 AND start_day <= $2::date
        ORDER BY start_day DESC LIMIT 1
        """

    /// The materials user `$1` read on day `$2` (the summary's today before the row's latest day with materials).
    static let materialsOfDay = "SELECT count(*) FROM analytics_day_materials WHERE user_id = $1 AND day = $2::date"

    /// The active days of user in `range`, oldest first: one range scan.
    func days(user: String, _ range: ClosedRange<LocalDay>) async throws -> [DailyActivity] {
        try Self.days(try await database.queryPrepared(Self.daysInRange, [user, range.lowerBound, range.upperBound]), dayColumn: 0)
    }

    /// The days in `range` (ending today) of rows read for the windows of `todays`: those rows'
    /// when `todays` holds today (a stored offset outside the offsets in use could put it
    /// outside), else read anew.
    func days(_ rows: PostgresRows, dayColumn: Int, user: String, in range: ClosedRange<LocalDay>,
              read todays: ClosedRange<LocalDay>) async throws -> [DailyActivity] {
        guard todays.contains(range.upperBound) else { return try await days(user: user, range) }
        return try Self.days(rows, dayColumn: dayColumn).filter { range.contains($0.day) }
    }

    /// The first row of a statement that returns one at least (a `(SELECT 1) LEFT JOIN`).
    static func first(_ rows: PostgresRows) throws -> PostgresRow {
        guard let row = rows.first else {
            throw PostgresError(code: .decoding, message: "the statement returned no row")
        }
        return row
    }

    /// The days of a result with a day column and the active seconds after it: none for a row
    /// whose day is NULL (a `LEFT JOIN` that found none).
    static func days(_ rows: PostgresRows, dayColumn: Int) throws -> [DailyActivity] {
        var days: [DailyActivity] = []
        days.reserveCapacity(rows.count)
        for row in rows {
            guard let day = try row.decode(LocalDay?.self, dayColumn) else { continue }
            days.append(DailyActivity(day: day, activeSeconds: try row.decode(Int.self, dayColumn + 1)))
        }
        return days
    }

    /// Up to `limit` sessions, newest start first, after `cursor`; plus the cursor of the
    /// next page when there may be more.
    ///
    /// The instants are read as the plain `timestamptz` columns they are (the session's end is
    /// `closed_at`, else `last_event_at`) and taken to the contract's milliseconds here: they
    /// are whole milliseconds as written, and `extract(epoch …) * 1000` in SQL was numeric
    /// arithmetic on every row (a fifth of PostgreSQL's time for a page of 20).
    public func sessions(user: String, limit: Int, after cursor: HistoryCursor?) async throws -> LearningHistoryResponse {
        let columns = "client_session_id, material_id, active_seconds, completed, started_at, closed_at, last_event_at"
        let rows: PostgresRows
        if let cursor {
            rows = try await database.queryPrepared("""
                SELECT \(columns) FROM analytics_sessions
                WHERE user_id = $1
                  AND (started_at, client_session_id) < (TIMESTAMPTZ 'epoch' + INTERVAL '1 millisecond' * $2::bigint, $3)
                ORDER BY started_at DESC, client_session_id DESC LIMIT $4
                """, [user, cursor.startedAtMillis, cursor.clientSessionID, limit + 1])
        } else {
            rows = try await database.queryPrepared("""
                SELECT \(columns) FROM analytics_sessions WHERE user_id = $1
                ORDER BY started_at DESC, client_session_id DESC LIMIT $2
                """, [user, limit + 1])
        }
        var sessions: [LearningHistoryResponse.Session] = []
        var last: HistoryCursor?
        for row in rows.prefix(limit) {
            let started = Self.milliseconds(try row.decode(Date.self, 4))
            let ended = Self.milliseconds(try row.decode(Date?.self, 5) ?? row.decode(Date.self, 6))
            let id = try row.decode(String.self, 0)
            sessions.append(LearningHistoryResponse.Session(
                clientSessionId: id, materialId: try row.decode(String.self, 1),
                startedAt: Date(timeIntervalSince1970: Double(started) / 1000),
                endedAt: Date(timeIntervalSince1970: Double(ended) / 1000),
                activeSeconds: try row.decode(Int.self, 2), completed: try row.decode(Bool.self, 3)))
            last = HistoryCursor(startedAtMillis: started, clientSessionID: id)
        }
        return LearningHistoryResponse(sessions: sessions, nextCursor: rows.count > limit ? last?.encoded : nil)
    }

    /// The epoch milliseconds of a stored instant (a whole millisecond, read to the microsecond).
    static func milliseconds(_ instant: Date) -> Int64 { Int64((instant.timeIntervalSince1970 * 1000).rounded()) }
}
