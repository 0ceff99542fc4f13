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
    /// `AnalyticsReadModel.window`), oldest first, read from the months that hold them: one
    /// statement, one row per month (at most 13).
    static func window(_ database: PostgresClient, user: String, count: Int, now: Date,
                       offsetMinutes: Int?) async throws -> (today: LocalDay, days: [DailyActivity]) {
        let day = AnalyticsWriter.fromDay
        let sql = """
            WITH t AS MATERIALIZED (SELECT today, today - $4::int + 1 AS first FROM (SELECT \(AnalyticsReadModel.today) AS today) AS s)
            SELECT t.today, t.first, m.month - DATE '1970-01-01' AS n, array_replace(m.seconds, NULL, 0)
            FROM t LEFT JOIN analytics_months m
              ON m.user_id = $1
             AND m.month BETWEEN \(day) t.first - (extract(day FROM \(day) t.first)::int - 1) AND \(day) t.today
            ORDER BY m.month
            """
        let rows = try await database.queryPrepared(sql, [user, LocalDay.epochSeconds(now), offsetMinutes, max(1, count)])
        guard let first = rows.first else {
            throw PostgresError(code: .decoding, message: "the statement returned no row for today", context: ["pg.column": "today"])
        }
        let today = try first.decode(Int.self, 0), from = try first.decode(Int.self, 1)
        var days: [DailyActivity] = []
        days.reserveCapacity(min(count, 366))
        for row in rows {
            guard let month = try row.decode(Int?.self, 2) else { continue }
            let seconds = try row.decode([Int].self, 3)
            for (index, value) in seconds.enumerated() where value != 0 {
                let number = month + index
                guard number >= from, number <= today else { continue }
                days.append(DailyActivity(day: LocalDay(number: number), activeSeconds: value))
            }
        }
        return (LocalDay(number: today), days)
    }
}
