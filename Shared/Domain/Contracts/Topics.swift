/// Kafka topic names (defaults; services read overrides from their configuration).
public enum Topics {
    /// Validated reading events, keyed by user id. ingest → progress-projector, analytics-aggregator.
    public static let readingEvents = "reading.events.v2"
    /// Reading progress changes, keyed by user id. progress-projector → realtime-notifier.
    public static let readingProgress = "reading.progress.v1"
    /// Transcode jobs, keyed by room id. ingest → transcode-worker.
    public static let roomTranscodeRequests = "room.transcode.requests.v1"
    /// Transcode status changes, keyed by room id. transcode-worker → realtime-notifier.
    public static let roomTranscodeStatus = "room.transcode.status.v1"
    /// Room versions before their transcode request (`uploading`, `abandoned`), keyed by room id.
    /// ingest → transcode-worker (the room catalog).
    public static let roomUploads = "room.uploads.v1"
    /// `{channel, event, payload}` from any producer, keyed by channel. anyone → realtime-notifier.
    public static let realtimeBroadcasts = "realtime.broadcasts.v1"
    /// Accounts whose data every service must erase, keyed by user id. ingest (account deletion) → every service.
    public static let userDeletions = "user.deletions.v1"
    /// Each service's confirmation that it erased a user, keyed by request id. every service → ingest (the receipt).
    public static let userDeletionStatus = "user.deletions.status.v1"
    /// Sequenced channel events, re-published for every notifier instance to read in full.
    public static let realtimeSequenced = "realtime.sequenced.v1"
    /// CrowdRoom's social writes (comments, likes, profiles), keyed by room id (a profile by user id).
    /// ingest → transcode-worker (the room catalog: comments, likes, counts, profiles, notifications),
    /// realtime-notifier (`user:{owner}` pushes).
    public static let roomInteractions = "room.interactions.v1"
    /// The learning app's writes (catalog, goals, sessions, review completions), keyed by user id
    /// (catalog writes: `catalog`). ingest → analytics-aggregator.
    public static let learningSessions = "learning.sessions.v1"

    /// Every topic of the system with its default partition count.
    public static let all: [(name: String, partitions: Int32)] = [
        (readingEvents, 6), (readingProgress, 6), (roomTranscodeRequests, 3), (roomTranscodeStatus, 3),
        (realtimeBroadcasts, 3), (realtimeSequenced, 1), (roomUploads, 3), (userDeletions, 6), (userDeletionStatus, 3),
        (deadLetter(for: readingEvents), 1), (deadLetter(for: roomTranscodeRequests), 1),
        (deadLetter(for: roomTranscodeStatus), 1), (deadLetter(for: realtimeBroadcasts), 1),
        (deadLetter(for: readingProgress), 1), (deadLetter(for: roomUploads), 1),
        (deadLetter(for: userDeletions), 1), (deadLetter(for: userDeletionStatus), 1), (deadLetter(for: realtimeSequenced), 1),
        (roomInteractions, 3), (deadLetter(for: roomInteractions), 1),
        (learningSessions, 6), (deadLetter(for: learningSessions), 1),
    ]

    /// The dead-letter topic of `topic`: `<topic>.dlq`.
    public static func deadLetter(for topic: String) -> String { topic + ".dlq" }
}
