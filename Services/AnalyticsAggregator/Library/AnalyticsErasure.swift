/// What the analytics aggregator erases of a user (`UserErasure`, service
/// `analytics-aggregator`): their event log and every aggregate.
public enum AnalyticsErasure {
    public static let service = "analytics-aggregator"

    public static let statements = [
        "DELETE FROM analytics_events WHERE user_id = $1",
        "DELETE FROM analytics_daily WHERE user_id = $1",
        "DELETE FROM analytics_months WHERE user_id = $1",
        "DELETE FROM analytics_day_materials WHERE user_id = $1",
        "DELETE FROM analytics_day_sessions WHERE user_id = $1",
        "DELETE FROM analytics_completions WHERE user_id = $1",
        "DELETE FROM analytics_sessions WHERE user_id = $1",
        "DELETE FROM analytics_users WHERE user_id = $1",
        "DELETE FROM analytics_streak_runs WHERE user_id = $1",
        // the learning app's read model (the catalog is nobody's)
        "DELETE FROM learning_profiles WHERE user_id = $1",
        "DELETE FROM learning_sessions WHERE user_id = $1",
        "DELETE FROM learning_review_tasks WHERE user_id = $1",
        "DELETE FROM learning_feedback WHERE user_id = $1",
        "DELETE FROM learning_outbox WHERE channel = 'user:' || $1",
    ]
}
