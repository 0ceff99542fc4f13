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
    /// `KAFKA_SESSION_TIMEOUT_MS` (10000); problems are collected in `reader`.
    public static func read(from reader: inout EnvironmentReader) -> AnalyticsConfiguration {
        AnalyticsConfiguration(
            streakThresholdSeconds: reader.int("ANALYTICS_STREAK_THRESHOLD_SECONDS", default: 60, range: 1...86_400),
            batchSize: reader.int("ANALYTICS_BATCH_SIZE", default: 4000, range: 1...10_000),
            batchWait: reader.milliseconds("ANALYTICS_BATCH_WAIT_MS", default: .milliseconds(50)),
            topic: reader.string("READING_EVENTS_TOPIC", default: Topics.readingEvents),
            sessionTimeout: reader.kafkaSessionTimeout(default: .seconds(10)))
    }
}
