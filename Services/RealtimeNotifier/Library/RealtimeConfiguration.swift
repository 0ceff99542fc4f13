import Contracts
import Foundation
import Lifecycle
import ServiceLogging
import ServiceRuntime
import Settings

/// Settings of the realtime notifier beyond the common ones.
public struct RealtimeConfiguration: Sendable {
    /// Source topics of the sequencer.
    public var transcodeStatusTopic: String
    /// Transcode requests: where the notifier learns a room's owner and visibility as soon as
    /// its upload completes (the notifier never reads another service's tables).
    public var transcodeRequestsTopic: String = Topics.roomTranscodeRequests
    /// Upload-init's announcements: where the notifier learns a room as soon as its upload
    /// starts, so the owner may watch `room:{roomId}` from the first step (seed `002_*` §6.1).
    public var roomUploadsTopic: String = Topics.roomUploads
    /// CrowdRoom's social writes: `comment_new` and `like_new` on the room owner's `user:` channel.
    public var interactionsTopic: String = Topics.roomInteractions
    public var progressTopic: String
    public var broadcastsTopic: String
    /// The internal topic of sequenced events every instance reads in full.
    public var sequencedTopic: String
    /// Consumer group of the sequencer (shared by every instance).
    public var sequencerGroupID: String
    /// Events kept per channel (older ones are trimmed)…
    public var historyMaxEvents: Int
    /// …and their maximum age.
    public var historyMaxAge: Duration
    /// Outgoing messages queued per connection before it is cut off as a slow consumer.
    public var maxQueuedMessages: Int
    public var maxQueuedBytes: Int
    /// Most bytes of a socket's queued messages written with one `send()` (0: one per message).
    public var coalescedWriteBytes = 16 * 1024
    /// Live events buffered per subscription while it catches up from the history (a join,
    /// a gap); beyond this the socket is cut off like a slow consumer.
    public var maxCatchUpBuffer: Int
    /// A socket that sends nothing (not even a heartbeat) for this long is closed.
    public var idleTimeout: Duration
    /// Channels one socket may join.
    public var maxChannelsPerSocket: Int
    /// Sequencer batches: records per transaction and wait.
    public var maxBatchRecords: Int
    public var maxBatchWait: Duration
    /// `fetch.wait.max.ms` of the sequencer's and the live consumers: how long a fetch waits
    /// when there is nothing new. nil: the service's `KAFKA_FETCH_WAIT_MS` (librdkafka's 500 ms
    /// unless set; a real broker answers as soon as data arrives). `backbone dev` sets 5 ms:
    /// its embedded broker always waits this long on an idle partition, on every event's path.
    public var fetchWait: Duration?
    /// How often unpublished history rows are re-published and old rows trimmed.
    public var maintenanceInterval: Duration
    /// A stable id for this instance (origin of client broadcasts, consumer group suffix).
    public var instanceID: String
    /// The project's publishable keys (`sb_publishable_…`, `REALTIME_PUBLISHABLE_KEYS`): opaque
    /// keys that a Supabase project made since 2025 gives its apps instead of the anon JWT. The
    /// socket takes one as it takes the anon key, as an anonymous client whose user arrives
    /// with each join's `access_token`; no key is accepted unless listed.
    public var publishableKeys: Set<String> = []

    public init(transcodeStatusTopic: String = Topics.roomTranscodeStatus, progressTopic: String = Topics.readingProgress,
                broadcastsTopic: String = Topics.realtimeBroadcasts, sequencedTopic: String = Topics.realtimeSequenced,
                sequencerGroupID: String = "realtime-sequencer", historyMaxEvents: Int = 1_000,
                historyMaxAge: Duration = .seconds(72 * 3600), maxQueuedMessages: Int = 1_024,
                maxQueuedBytes: Int = 4 << 20, maxCatchUpBuffer: Int = 20_000, idleTimeout: Duration = .seconds(60), maxChannelsPerSocket: Int = 100,
                maxBatchRecords: Int = 500, maxBatchWait: Duration = .milliseconds(2),
                fetchWait: Duration? = nil, maintenanceInterval: Duration = .seconds(5),
                instanceID: String = InstanceName.unique()) {
        self.transcodeStatusTopic = transcodeStatusTopic
        self.progressTopic = progressTopic
        self.broadcastsTopic = broadcastsTopic
        self.sequencedTopic = sequencedTopic
        self.sequencerGroupID = sequencerGroupID
        self.historyMaxEvents = historyMaxEvents
        self.historyMaxAge = historyMaxAge
        self.maxQueuedMessages = maxQueuedMessages
        self.maxQueuedBytes = maxQueuedBytes
        self.maxCatchUpBuffer = maxCatchUpBuffer
        self.idleTimeout = idleTimeout
        self.maxChannelsPerSocket = maxChannelsPerSocket
        self.maxBatchRecords = maxBatchRecords
        self.maxBatchWait = maxBatchWait
        self.fetchWait = fetchWait
        self.maintenanceInterval = maintenanceInterval
        self.instanceID = instanceID
    }

    /// `REALTIME_HISTORY_EVENTS`, `REALTIME_HISTORY_SECONDS`, `REALTIME_QUEUE_MESSAGES`,
    /// `REALTIME_QUEUE_BYTES`, `REALTIME_CATCHUP_BUFFER`, `REALTIME_IDLE_SECONDS`, `REALTIME_MAX_CHANNELS`,
    /// `REALTIME_SEQUENCER_GROUP`, `REALTIME_BATCH_RECORDS`, `REALTIME_BATCH_WAIT_MS`, `REALTIME_FETCH_WAIT_MS`,
    /// `REALTIME_INSTANCE_ID`, `REALTIME_WRITE_COALESCE_BYTES`, `REALTIME_PUBLISHABLE_KEYS` and the topic overrides `ROOM_TRANSCODE_STATUS_TOPIC`, `ROOM_TRANSCODE_REQUESTS_TOPIC`,
    /// `READING_PROGRESS_TOPIC`, `REALTIME_BROADCASTS_TOPIC`, `REALTIME_SEQUENCED_TOPIC`.
    public static func read(from env: inout EnvironmentReader) -> RealtimeConfiguration {
        var configuration = RealtimeConfiguration(
            transcodeStatusTopic: env.string("ROOM_TRANSCODE_STATUS_TOPIC", default: Topics.roomTranscodeStatus),
            progressTopic: env.string("READING_PROGRESS_TOPIC", default: Topics.readingProgress),
            broadcastsTopic: env.string("REALTIME_BROADCASTS_TOPIC", default: Topics.realtimeBroadcasts),
            sequencedTopic: env.string("REALTIME_SEQUENCED_TOPIC", default: Topics.realtimeSequenced),
            sequencerGroupID: env.string("REALTIME_SEQUENCER_GROUP", default: "realtime-sequencer"),
            historyMaxEvents: env.int("REALTIME_HISTORY_EVENTS", default: 1_000, range: 1...1_000_000),
            historyMaxAge: .seconds(env.int("REALTIME_HISTORY_SECONDS", default: 72 * 3600, range: 1...(365 * 86_400))),
            maxQueuedMessages: env.int("REALTIME_QUEUE_MESSAGES", default: 1_024, range: 8...1_000_000),
            maxQueuedBytes: env.int("REALTIME_QUEUE_BYTES", default: 4 << 20, range: 4_096...(1 << 30)),
            maxCatchUpBuffer: env.int("REALTIME_CATCHUP_BUFFER", default: 20_000, range: 16...10_000_000),
            idleTimeout: .seconds(env.int("REALTIME_IDLE_SECONDS", default: 60, range: 1...86_400)),
            maxChannelsPerSocket: env.int("REALTIME_MAX_CHANNELS", default: 100, range: 1...10_000),
            maxBatchRecords: env.int("REALTIME_BATCH_RECORDS", default: 500, range: 1...10_000),
            maxBatchWait: env.milliseconds("REALTIME_BATCH_WAIT_MS", default: .milliseconds(2)),
            fetchWait: env.optionalMilliseconds("REALTIME_FETCH_WAIT_MS", range: 0...300_000))
        if let id = env.optionalString("REALTIME_INSTANCE_ID") { configuration.instanceID = id }
        configuration.coalescedWriteBytes = env.int("REALTIME_WRITE_COALESCE_BYTES", default: 16 * 1024, range: 0...(1 << 20))
        configuration.transcodeRequestsTopic = env.string("ROOM_TRANSCODE_REQUESTS_TOPIC", default: Topics.roomTranscodeRequests)
        configuration.roomUploadsTopic = env.string("ROOM_UPLOADS_TOPIC", default: Topics.roomUploads)
        configuration.interactionsTopic = env.string("ROOM_INTERACTIONS_TOPIC", default: Topics.roomInteractions)
        for key in env.list("REALTIME_PUBLISHABLE_KEYS") ?? [] {
            if key.hasPrefix("sb_publishable_") && key.utf8.count <= 200 {
                configuration.publishableKeys.insert(key)
            } else {
                env.fail("REALTIME_PUBLISHABLE_KEYS: \"\(key.prefix(40))\" is not a publishable key (sb_publishable_…)")
            }
        }
        return configuration
    }

    /// librdkafka properties of the clients on every event's path (the sequencer's consumer,
    /// the sequenced-event producer, the live consumer): Nagle off, as Kafka's own clients
    /// and brokers do. librdkafka leaves it on by default, and a small request written
    /// while an earlier one is unacknowledged then waits for the peer's delayed ACK (40 ms
    /// on Linux).
    static let lowLatencySockets = ["socket.nagle.disable": "true"]

    /// The librdkafka properties of the consumers on every event's path: `common` (the
    /// service's `kafkaConsumerProperties`), `lowLatencySockets`, and `fetchWait` if set.
    func consumerProperties(common: [String: String]) -> [String: String] {
        common.merging(Self.lowLatencySockets) { $1 }.merging(CommonConfiguration.consumerProperties(fetchWait: fetchWait)) { $1 }
    }
}
