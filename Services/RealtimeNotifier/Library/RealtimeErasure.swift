/// What the realtime notifier erases of a user (`UserErasure`, service `realtime-notifier`):
/// the history and sequence of their `user:` channel and of the `room:` channels of their
/// rooms, the room records themselves, and the pushes her comments and likes made on other
/// users' channels (`comment_new`, `like_new`: their payload names her as `actor_id`).
public enum RealtimeErasure {
    public static let service = "realtime-notifier"

    static let channels = """
        channel = 'user:' || $1 OR channel IN (SELECT 'room:' || room_id FROM realtime_rooms WHERE owner_user_id = $1)
        """

    public static let statements = [
        "DELETE FROM realtime_history WHERE \(channels)",
        "DELETE FROM realtime_history WHERE event IN ('comment_new', 'like_new') AND payload->>'actor_id' = $1",
        "DELETE FROM realtime_channels WHERE \(channels)",
        "DELETE FROM realtime_rooms WHERE owner_user_id = $1",
    ]
}
