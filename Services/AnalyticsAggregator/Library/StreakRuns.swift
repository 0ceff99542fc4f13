import Postgres

/// The runs of consecutive qualifying days (`analytics_streak_runs`): what the summary reads
/// its current and longest streak from, instead of every day the user was ever active.
///
/// A day qualifies once its active time reaches the threshold, and since a day's time only
/// grows, a qualifying day stays qualifying: runs only ever grow and merge. The aggregator
/// recomputes the runs of just the users whose day crossed the threshold in a batch (from their
/// qualifying days, in the batch's upsert statement: `AnalyticsWriter.upsertAll`), so the runs are a function of the daily totals
/// whatever order the events came in — a replay, a late event that joins two runs, or a
/// rebuild gives the same rows.
///
/// The threshold is configuration (`ANALYTICS_STREAK_THRESHOLD_SECONDS`); the one the runs were
/// computed with is stored (`analytics_streak_settings`), and when it differs from the
/// configured one every user's runs are recomputed (`align`): when the service starts, and in
/// every batch's transaction before its runs are touched (a point read while they agree); the
/// users' summary rows (`UserSummary`) are recomputed with them.
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
        try await connection.execute("DELETE FROM analytics_streak_runs")
        try await connection.execute(Self.recomputeAll, [thresholdSeconds])
        try await connection.execute(UserSummary.recomputeAll)
        try await connection.execute("UPDATE analytics_streak_settings SET threshold_seconds = $1", [thresholdSeconds])
        return true
    }

    /// Every user's runs anew from their daily totals (`$1` the threshold), once the old ones
    /// are deleted: after a threshold change runs may split or vanish.
    static let recomputeAll = """
        INSERT INTO analytics_streak_runs (user_id, start_day, end_day)
        \(islands(of: "(SELECT user_id, day FROM analytics_daily WHERE active_seconds >= $1)")) ORDER BY user_id, start_day
        """

    /// The runs of `qualifying` (a relation of `user_id, day`, each pair once): the islands of
    /// consecutive days, as `user_id, start_day, end_day`.
    static func islands(of qualifying: String) -> String {
        """
        SELECT user_id, min(day) AS start_day, max(day) AS end_day
        FROM (SELECT user_id, day, day - (row_number() OVER (PARTITION BY user_id ORDER BY day))::int AS island
              FROM \(qualifying) AS qualifying) AS numbered
        GROUP BY user_id, island
        """
    }
}
