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
    /// ending today that have any event, oldest first: one statement.
    ///
    /// "Today" is `LocalDay(instant: now, offsetMinutes:)` for `offsetMinutes`, or when that is
    /// `nil` for the offset of the user's latest event (UTC when they have none).
    public func window(user: String, count: Int, now: Date, offsetMinutes: Int?) async throws -> (today: LocalDay, days: [DailyActivity]) {
        let sql = """
            WITH t AS MATERIALIZED (SELECT \(Self.today) AS today)
            SELECT t.today, d.day - DATE '1970-01-01' AS n, d.active_seconds
            FROM t LEFT JOIN analytics_daily d
              ON d.user_id = $1 AND d.day BETWEEN DATE '1970-01-01' + (t.today - $4::int + 1) AND DATE '1970-01-01' + t.today
            ORDER BY d.day
            """
        let rows = try await database.queryPrepared(sql, [user, LocalDay.epochSeconds(now), offsetMinutes, max(1, count)])
        return (try Self.today(rows), try Self.days(rows, dayColumn: 1))
    }

    /// `window`'s answer read from the months that hold the days (`ActivityMonths`): at most 13
    /// rows for the heatmap's year instead of a row per active day.
    public func heatmapWindow(user: String, count: Int, now: Date, offsetMinutes: Int?) async throws -> (today: LocalDay, days: [DailyActivity]) {
        try await ActivityMonths.window(database, user: user, count: count, now: now, offsetMinutes: offsetMinutes)
    }

    /// The rows of `GET /learning/summary` (today as in `window`): the user's summary row
    /// (`UserSummary`, one point read) and the days of the seven ending today (one short range
    /// scan), whatever the length of the user's history. The current streak is the run holding
    /// today or yesterday — the latest run starting by today, if it reaches yesterday — counted
    /// up to today: the row's latest run when it starts by today, else (a today before it, from
    /// a `tz` west of the user's own) the runs themselves; likewise the materials read today.
    public func summary(user: String, now: Date, offsetMinutes: Int?) async throws -> SummaryRows {
        let day = AnalyticsWriter.fromDay
        let sql = """
            WITH t AS MATERIALIZED (
                SELECT today,
                       CASE WHEN u.materials_day IS NULL OR u.materials_day < \(day) today THEN 0
                            WHEN u.materials_day = \(day) today THEN u.materials_day_count
                            ELSE (SELECT count(*) FROM analytics_day_materials WHERE user_id = $1 AND day = \(day) today) END AS read,
                       COALESCE(u.materials_completed, 0) AS completed,
                       u.last_active_day - DATE '1970-01-01' AS last_active,
                       CASE WHEN u.last_run_start IS NULL THEN 0
                            WHEN u.last_run_start <= \(day) today THEN
                                CASE WHEN u.last_run_end >= \(day) (today - 1)
                                     THEN LEAST(u.last_run_end, \(day) today) - u.last_run_start + 1 ELSE 0 END
                            ELSE (SELECT CASE WHEN end_day >= \(day) (today - 1) THEN LEAST(end_day, \(day) today) - start_day + 1 ELSE 0 END
                                  FROM analytics_streak_runs WHERE user_id = $1 AND start_day <= \(day) today
                                  ORDER BY start_day DESC LIMIT 1) END AS current,
                       COALESCE(u.longest_streak_days, 0) AS longest
                FROM (SELECT floor(($2::bigint + 60 * COALESCE($3::int, u.tz_offset_minutes, 0)) / 86400.0)::int AS today, u.*
                      FROM (SELECT 1) AS one LEFT JOIN analytics_users u ON u.user_id = $1) AS u)
            SELECT t.today, t.read, t.completed, t.last_active, COALESCE(t.current, 0), t.longest,
                   d.day - DATE '1970-01-01' AS n, d.active_seconds
            FROM t LEFT JOIN analytics_daily d
              ON d.user_id = $1 AND d.day BETWEEN \(day) (t.today - 6) AND \(day) t.today
            ORDER BY d.day
            """
        let rows = try await database.queryPrepared(sql, [user, LocalDay.epochSeconds(now), offsetMinutes])
        let first = rows.first
        return SummaryRows(today: try Self.today(rows), days: try Self.days(rows, dayColumn: 6),
                           currentStreakDays: try first?.decode(Int.self, 4) ?? 0,
                           longestStreakDays: try first?.decode(Int.self, 5) ?? 0,
                           lastActiveDay: try first?.decode(Int?.self, 3).map(LocalDay.init(number:)),
                           materialsReadToday: try first?.decode(Int.self, 1) ?? 0,
                           materialsCompleted: try first?.decode(Int.self, 2) ?? 0)
    }

    /// The local day number of `$2` (epoch seconds) for `$3` minutes east of UTC, else the
    /// offset of user `$1`'s latest event, else 0: `LocalDay(instant:offsetMinutes:)` in SQL
    /// (floor division, so days before 1970 and negative offsets round down as there).
    static let today = """
        floor(($2::bigint + 60 * COALESCE($3::int, (SELECT tz_offset_minutes FROM analytics_users WHERE user_id = $1), 0)) / 86400.0)::int
        """

    private static func today(_ rows: PostgresRows) throws -> LocalDay {
        guard let row = rows.first else {
            throw PostgresError(code: .decoding, message: "the statement returned no row for today", context: ["pg.column": "today"])
        }
        return LocalDay(number: try row.decode(Int.self, 0))
    }

    /// The days of a `t LEFT JOIN analytics_daily` result: none when its one row has no day.
    private static func days(_ rows: PostgresRows, dayColumn: Int) throws -> [DailyActivity] {
        var days: [DailyActivity] = []
        days.reserveCapacity(rows.count)
        for row in rows {
            guard let number = try row.decode(Int?.self, dayColumn) else { continue }
            days.append(DailyActivity(day: LocalDay(number: number), activeSeconds: try row.decode(Int.self, dayColumn + 1)))
        }
        return days
    }

    /// Up to `limit` sessions, newest start first, after `cursor`; plus the cursor of the
    /// next page when there may be more.
    public func sessions(user: String, limit: Int, after cursor: HistoryCursor?) async throws -> LearningHistoryResponse {
        let columns = """
            client_session_id, material_id, active_seconds, completed,
            (extract(epoch FROM started_at) * 1000)::bigint AS started_ms,
            (extract(epoch FROM COALESCE(closed_at, last_event_at)) * 1000)::bigint AS ended_ms
            """
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
            let started = try row.decode(Int64.self, "started_ms")
            let id = try row.decode(String.self, "client_session_id")
            sessions.append(LearningHistoryResponse.Session(
                clientSessionId: id, materialId: try row.decode(String.self, "material_id"),
                startedAt: Date(timeIntervalSince1970: Double(started) / 1000),
                endedAt: Date(timeIntervalSince1970: Double(try row.decode(Int64.self, "ended_ms")) / 1000),
                activeSeconds: try row.decode(Int.self, "active_seconds"), completed: try row.decode(Bool.self, "completed")))
            last = HistoryCursor(startedAtMillis: started, clientSessionID: id)
        }
        return LearningHistoryResponse(sessions: sessions, nextCursor: rows.count > limit ? last?.encoded : nil)
    }
}
