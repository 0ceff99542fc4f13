import Foundation
import Postgres

/// The heatmap's read model: a user's daily active seconds as one `bigint[31]` per user and
/// calendar month (`analytics_months`), so a year is 13 rows of a range scan instead of up to
/// 366 rows of `analytics_daily`.
///
/// Element `i` (1-based) is `analytics_daily.active_seconds` of the month's day `i`, NULL where
/// that table has no row (and past the month's last day). The aggregator's batch statement keeps
/// it in the transaction that changes the days (`AnalyticsWriter.upsertAll`): the new totals its
/// daily upsert returns are merged into their months' arrays (a day's total replaces the element;
/// the days the batch did not touch keep theirs), so the arrays are a function of the daily
/// table whatever order the batches came in. The migration that adds the table fills it from the
/// daily table; erasure deletes it with the days; `backbone rebuild analytics` re-creates it.
public enum ActivityMonths {
    /// The months' rows, each with its array, of a relation of `(user_id, day, active_seconds)`
    /// rows (each day once): the SELECT the batch and the migration insert.
    static func arrays(of days: String) -> String {
        """
        SELECT g.user_id, g.month,
               ARRAY(SELECT n.v FROM generate_series(1, 31) AS i LEFT JOIN unnest(g.ps, g.vs) AS n(p, v) ON n.p = i ORDER BY i)
        FROM (SELECT user_id, day - (extract(day FROM day)::int - 1) AS month,
                     array_agg(extract(day FROM day)::int) AS ps, array_agg(active_seconds) AS vs
              FROM \(days) AS days GROUP BY 1, 2) AS g
        ORDER BY g.user_id, g.month
        """
    }

    /// The upsert of the months of `days`' new totals (the batch statement's CTE body): an
    /// existing month keeps the elements the new array leaves NULL.
    static func upsert(from days: String) -> String {
        """
        INSERT INTO analytics_months (user_id, month, seconds)
        \(arrays(of: days))
        ON CONFLICT (user_id, month) DO UPDATE SET seconds = ARRAY(
            SELECT COALESCE(x.new, x.old) FROM unnest(EXCLUDED.seconds, analytics_months.seconds) WITH ORDINALITY AS x(new, old, i)
            ORDER BY x.i)
        """
    }

    /// Every user's months as the daily table gives them: what the kept rows must equal, and
    /// what the migration fills the table with.
    public static let fromDailySelect = arrays(of: "analytics_daily")

    /// `fromDailySelect` as `user|month|{…}` text (as `keptRows` writes the kept rows).
    public static let fromDailyTable = """
        SELECT a.user_id || '|' || a.month::text || '|' || a.seconds::text FROM (\(fromDailySelect)) AS a(user_id, month, seconds)
        """

    /// The kept rows, as `fromDailyTable` writes them.
    public static let keptRows = """
        SELECT user_id || '|' || month::text || '|' || seconds::text FROM analytics_months ORDER BY user_id, month
        """

    /// The migration that adds the table (and fills it from the daily table).
    static let migration = """
        -- the heatmap's year in 13 rows (ActivityMonths): a user's daily active seconds per
        -- calendar month, element i = day i, NULL where analytics_daily has no row
        CREATE TABLE IF NOT EXISTS analytics_months (
            user_id  text     NOT NULL,
            month    date     NOT NULL,
            seconds  bigint[] NOT NULL,
            PRIMARY KEY (user_id, month)
        );
        INSERT INTO analytics_months (user_id, month, seconds)
        \(fromDailySelect)
        ON CONFLICT DO NOTHING;
        """

    /// The active days of the `count` local days ending today (today as in
    /// `AnalyticsReadModel.window`), in no particular order, read from the months that hold them:
    /// one statement, one row per month (at most 13; 14 without a `tz` when the todays of the
    /// offsets in use straddle a month's turn). Each month's array comes as stored, its NULLs
    /// (days without a row) read as nothing here: replacing them in SQL (`array_replace`) copied
    /// the array first, and joining the elements (`array_to_string`) formats each through
    /// `snprintf` — both cost PostgreSQL more than `array_out` of the array as it is.
    static func window(_ database: PostgresClient, user: String, count: Int, now: Date,
                       offsetMinutes: Int?) async throws -> (today: LocalDay, days: [DailyActivity]) {
        let count = max(1, count)
        let todays = AnalyticsReadModel.todays(now: now, offsetMinutes: offsetMinutes)
        var rows = try await database.queryPrepared(offsetMinutes == nil ? offsetAndMonths : monthsInRange,
                                                    [user, month(of: todays.lowerBound - (count - 1)), todays.upperBound])
        var column = offsetMinutes == nil ? 1 : 0
        var today = todays.upperBound
        if offsetMinutes == nil {
            today = LocalDay(instant: now, offsetMinutes: try AnalyticsReadModel.first(rows).decode(Int?.self, 0) ?? 0)
            if !todays.contains(today) {  // a stored offset outside the offsets in use
                rows = try await database.queryPrepared(monthsInRange, [user, month(of: today - (count - 1)), today])
                column = 0
            }
        }
        let from = today - (count - 1)
        var days: [DailyActivity] = []
        days.reserveCapacity(min(count, 366))
        for row in rows {
            guard let month = try row.decode(LocalDay?.self, column) else { continue }
            for (index, value) in try row.decode([Int?].self, column + 1).enumerated() {
                guard let value, value != 0 else { continue }
                let day = month + index
                guard day >= from, day <= today else { continue }
                days.append(DailyActivity(day: day, activeSeconds: value))
            }
        }
        return (today, days)
    }

    /// The first day of `day`'s month.
    static func month(of day: LocalDay) -> LocalDay { day - (day.civil.day - 1) }

    /// The months' columns: the month and its elements.
    static let columns = "r.month, r.seconds"

    /// The user's offset and the months of `$2…$3` (the heatmap without a `tz`).
    static let offsetAndMonths = AnalyticsReadModel.userRowAnd("u.tz_offset_minutes", columns, of: "analytics_months", key: "month")

    /// The months of user `$1` in `$2…$3`.
    static let monthsInRange = """
        SELECT \(columns) FROM analytics_months r WHERE r.user_id = $1 AND r.month BETWEEN $2::date AND $3::date
        """
}
