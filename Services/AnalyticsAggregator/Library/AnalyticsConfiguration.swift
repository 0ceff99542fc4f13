import Contracts
import ServiceRuntime
import Settings

/// Settings of the analytics aggregator beyond the common ones.
public struct AnalyticsConfiguration: Sendable {
    /// A local day counts towards a streak when its active time reaches this many seconds.
    public var streakThresholdSeconds: Int
    /// Up to this many records per read-model transaction (batches only fill up under a
    /// backlog; per event a bigger transaction costs less)…
    public var batchSize: Int
    /// …or what arrived within this long.
    public var batchWait: Duration
    /// The reading-event topic to consume.
    public var topic: String
    /// The consumer group (and the key of its stored offsets).
    public var groupID: String
    /// How long the group waits for a silent member before giving its partitions to another.
    public var sessionTimeout: Duration

    /// The learning app's writes (`learning.sessions.v1`), their consumer group, and where the
    /// `analysis_ready` pushes go.
    public var learningTopic: String = Topics.learningSessions
    public var learningGroupID: String = "analytics-learning"
    public var broadcastsTopic: String = Topics.realtimeBroadcasts
    /// How often pushes left in the learning outbox (a failed after-commit publish) are sent.
    public var learningOutboxInterval: Duration = .milliseconds(500)
    /// The model endpoint of `POST /ai/analyze-learning-input` and `POST /ai/chat` (`AI_API_*`); nil: none.
    public var ai: AIConfiguration?

    public static let defaultGroupID = "analytics-aggregator"

    public init(streakThresholdSeconds: Int = 60, batchSize: Int = 4000, batchWait: Duration = .milliseconds(50),
                topic: String = Topics.readingEvents, groupID: String = AnalyticsConfiguration.defaultGroupID,
                sessionTimeout: Duration = .seconds(10)) {
        self.streakThresholdSeconds = streakThresholdSeconds
        self.batchSize = batchSize
        self.batchWait = batchWait
        self.topic = topic
        self.groupID = groupID
        self.sessionTimeout = sessionTimeout
    }

    /// Reads `ANALYTICS_STREAK_THRESHOLD_SECONDS` (default 60), `ANALYTICS_BATCH_SIZE`
    /// (4000), `ANALYTICS_BATCH_WAIT_MS` (50), `READING_EVENTS_TOPIC` (`reading.events.v2`) and
    /// `KAFKA_SESSION_TIMEOUT_MS` (10000), `LEARNING_SESSIONS_TOPIC` (`learning.sessions.v1`),
    /// `ANALYTICS_LEARNING_GROUP_ID` (`analytics-learning`) and `REALTIME_BROADCASTS_TOPIC`
    /// (`realtime.broadcasts.v1`); problems are collected in `reader`.
    public static func read(from reader: inout EnvironmentReader) -> AnalyticsConfiguration {
        var configuration = AnalyticsConfiguration(
            streakThresholdSeconds: reader.int("ANALYTICS_STREAK_THRESHOLD_SECONDS", default: 60, range: 1...86_400),
            batchSize: reader.int("ANALYTICS_BATCH_SIZE", default: 4000, range: 1...10_000),
            batchWait: reader.milliseconds("ANALYTICS_BATCH_WAIT_MS", default: .milliseconds(50)),
            topic: reader.string("READING_EVENTS_TOPIC", default: Topics.readingEvents),
            sessionTimeout: reader.kafkaSessionTimeout(default: .seconds(10)))
        configuration.learningTopic = reader.string("LEARNING_SESSIONS_TOPIC", default: Topics.learningSessions)
        configuration.learningGroupID = reader.string("ANALYTICS_LEARNING_GROUP_ID", default: "analytics-learning")
        configuration.broadcastsTopic = reader.string("REALTIME_BROADCASTS_TOPIC", default: Topics.realtimeBroadcasts)
        configuration.ai = AIConfiguration.read(from: &reader)
        return configuration
    }
}
