/// What the progress projector erases of a user (`UserErasure`, service `progress-projector`):
/// their event log, their progress rows and the notifications still queued for them.
public enum ProgressErasure {
    public static let service = "progress-projector"

    public static let statements = [
        "DELETE FROM progress_event_log WHERE user_id = $1",
        "DELETE FROM reading_progress WHERE user_id = $1",
        "DELETE FROM progress_notify_outbox WHERE user_id = $1",
    ]
}
