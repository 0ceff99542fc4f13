import Postgres

/// The runs of consecutive qualifying days (`analytics_streak_runs`): what the summary reads
/// its current and longest streak from, instead of every day the user was ever active.
///
/// A day qualifies once its active time reaches the threshold, and since a day's time only
/// grows, a qualifying day stays qualifying: runs only ever grow and merge. The aggregator
/// recomputes the runs of just the users whose day crossed the threshold in a batch (from their
/// qualifying days, in the batch's transaction), so the runs are a function of the daily totals
/// whatever order the events came in — a replay, a late event that joins two runs, or a
/// rebuild gives the same rows.
///
/// The threshold is configuration (`ANALYTICS_STREAK_THRESHOLD_SECONDS`); the one the runs were
/// computed with is stored (`analytics_streak_settings`), and when it differs from the
/// configured one every user's runs are recomputed (`align`): when the service starts, and in
/// every batch's transaction before its runs are touched (a point read while they agree).
public struct StreakRuns: Sendable {
    public let thresholdSeconds: Int

    public init(thresholdSeconds: Int) {
        self.thresholdSeconds = max(1, thresholdSeconds)
    }

    /// Recomputes every user's runs unless they were computed with this threshold, in the
    /// caller's transaction; returns whether it did. A recompute locks the settings row, so two
    /// processes aligning at once take turns and the second finds the work done.
    @discardableResult
    public func align(in connection: PostgresConnection) async throws -> Bool {
        let select = "SELECT threshold_seconds FROM analytics_streak_settings"
        guard try await connection.query(select).first?.decode(Int.self, 0) != thresholdSeconds else { return false }
        try await connection.execute("INSERT INTO analytics_streak_settings (threshold_seconds) VALUES (0) ON CONFLICT DO NOTHING")
        guard try await connection.query(select + " FOR UPDATE").first?.decode(Int.self, 0) != thresholdSeconds else { return false }
        try await connection.execute(Self.recomputeAll, [thresholdSeconds])
        try await connection.execute("UPDATE analytics_streak_settings SET threshold_seconds = $1", [thresholdSeconds])
        return true
    }

    /// Recomputes the runs of `users` from their daily totals.
    func recompute(users: [String], in connection: PostgresConnection) async throws {
        guard !users.isEmpty else { return }
        try await connection.execute(Self.recomputeUsers, [thresholdSeconds, users.sorted()])
    }

    /// Replaces the runs of every user, or of the users `$2` lists, by the islands of their
    /// qualifying days (`$1` the threshold): the runs whose start is still a start are updated in
    /// place, the others (merged into an earlier run, or split by a higher threshold) deleted —
    /// two disjoint sets of rows, one statement.
    private static func recompute(listedUsersOnly: Bool) -> String {
        let listed = listedUsersOnly ? " AND user_id = ANY($2::text[])" : ""
        return """
            WITH fresh AS MATERIALIZED (
                SELECT user_id, min(day) AS start_day, max(day) AS end_day
                FROM (SELECT user_id, day, day - (row_number() OVER (PARTITION BY user_id ORDER BY day))::int AS island
                      FROM analytics_daily WHERE active_seconds >= $1\(listed)) AS qualifying
                GROUP BY user_id, island
            ), replaced AS (
                DELETE FROM analytics_streak_runs
                WHERE NOT EXISTS (SELECT 1 FROM fresh f
                                  WHERE f.user_id = analytics_streak_runs.user_id AND f.start_day = analytics_streak_runs.start_day)\(listed)
            )
            INSERT INTO analytics_streak_runs (user_id, start_day, end_day)
            SELECT user_id, start_day, end_day FROM fresh ORDER BY user_id, start_day
            ON CONFLICT (user_id, start_day) DO UPDATE SET end_day = EXCLUDED.end_day
                WHERE analytics_streak_runs.end_day <> EXCLUDED.end_day
            """
    }

    static let recomputeUsers = recompute(listedUsersOnly: true)
    static let recomputeAll = recompute(listedUsersOnly: false)
}
