/// The summary's row per user: what `GET /learning/summary` reads besides the days of its week,
/// kept in `analytics_users` (the row that already holds the user's offset, from which the
/// summary's "today" follows), so the summary is one point read and one seven-day range scan
/// instead of seven index reads.
///
/// - `materials_completed`: the user's `analytics_completions` rows.
/// - `last_active_day`: the latest day with active time.
/// - `longest_streak_days`, `last_run_start`/`last_run_end`: the longest of the user's
///   `analytics_streak_runs` and the one starting latest.
/// - `materials_day`/`materials_day_count`: the latest day in `analytics_day_materials` and its
///   rows.
///
/// Each is a function of those tables, kept by the batch statement that changes them
/// (`AnalyticsWriter.upsertAll`, from what its upserts return) and recomputed whole where the
/// tables change otherwise: when the streak runs are recomputed for a new threshold
/// (`StreakRuns.align`) and by the migration that added the columns. The summary falls back to
/// the tables for the cases the row does not answer — a "today" before the latest run's start or
/// before the latest day with materials (a `tz` west of the user's own).
public enum UserSummary {
    /// Every user's summary columns anew from the tables.
    public static let recomputeAll = """
        UPDATE analytics_users u SET
            materials_completed = (SELECT count(*) FROM analytics_completions c WHERE c.user_id = u.user_id),
            last_active_day = (SELECT max(day) FROM analytics_daily d WHERE d.user_id = u.user_id AND d.active_seconds > 0),
            longest_streak_days = COALESCE((SELECT max(end_day - start_day) + 1 FROM analytics_streak_runs r
                                            WHERE r.user_id = u.user_id), 0),
            last_run_start = (SELECT max(start_day) FROM analytics_streak_runs r WHERE r.user_id = u.user_id),
            last_run_end = (SELECT end_day FROM analytics_streak_runs r WHERE r.user_id = u.user_id
                            ORDER BY start_day DESC LIMIT 1),
            materials_day = (SELECT max(day) FROM analytics_day_materials m WHERE m.user_id = u.user_id),
            materials_day_count = (SELECT count(*) FROM analytics_day_materials m
                                   WHERE m.user_id = u.user_id
                                     AND m.day = (SELECT max(day) FROM analytics_day_materials l WHERE l.user_id = u.user_id))
        """

    /// The summary row as text, for comparing two ways of arriving at it.
    public static let columns = """
        user_id, materials_completed, COALESCE(last_active_day::text, '-'), longest_streak_days,
        COALESCE(last_run_start::text, '-'), COALESCE(last_run_end::text, '-'), COALESCE(materials_day::text, '-'), materials_day_count
        """

    /// The migration that adds the columns (and fills them from the tables).
    static let migration = """
        -- the summary's row per user (UserSummary), kept by the aggregator's batch statement
        ALTER TABLE analytics_users
            ADD COLUMN IF NOT EXISTS materials_completed  integer NOT NULL DEFAULT 0,
            ADD COLUMN IF NOT EXISTS last_active_day      date,
            ADD COLUMN IF NOT EXISTS longest_streak_days  integer NOT NULL DEFAULT 0,
            ADD COLUMN IF NOT EXISTS last_run_start       date,
            ADD COLUMN IF NOT EXISTS last_run_end         date,
            ADD COLUMN IF NOT EXISTS materials_day        date,
            ADD COLUMN IF NOT EXISTS materials_day_count  integer NOT NULL DEFAULT 0;
        \(recomputeAll);
        """
}
