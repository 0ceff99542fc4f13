import Contracts
import Foundation
import ServiceRuntime
import Settings

/// The ingest service's own settings, read from the environment with defaults.
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `INGEST_MAX_BATCH_EVENTS` | 500 | events per `POST /learning/reading-events/batch` before 413 |
/// | `INGEST_MAX_BATCH_BYTES` | 1048576 | body bytes of a batch before 413 |
/// | `INGEST_RATE_LIMIT_PER_SECOND` | 10 | sustained requests per user and second (per instance) |
/// | `INGEST_RATE_LIMIT_BURST` | 30 | requests a user may make at once |
/// | `INGEST_MAX_USDZ_BYTES` | 52428800 | `source.usdzBytes` before `FILE_TOO_LARGE` (50 MiB) |
/// | `INGEST_MAX_ROOMPLAN_JSON_BYTES` | 5242880 | the most a `roomplan.json` upload-init did not size may hold (reserved until completion finds its size) |
/// | `INGEST_MONTHLY_UPLOAD_QUOTA_BYTES` | 1073741824 | per-user bytes per UTC calendar month before `QUOTA_EXCEEDED` |
/// | `INGEST_UPLOAD_TIER` | `free` | the tier `GET /rooms/quota` reports |
/// | `INGEST_UPLOAD_URL_TTL_SECONDS` | 900 | life of the presigned upload URLs |
/// | `INGEST_MULTIPART_THRESHOLD_BYTES` | 31457280 | a `source.usdz` over this is uploaded in parts (30 MiB) |
/// | `INGEST_MULTIPART_PART_BYTES` | 5242880 | part size (5 MiB) |
/// | `INGEST_ABANDON_UPLOADS_AFTER_SECONDS` | 86400 | an upload not completed by then is swept: quota back, objects deleted |
/// | `INGEST_UPLOAD_SWEEP_INTERVAL_MS` | 60000 | how often the sweep runs |
/// | `READING_EVENTS_TOPIC` | `reading.events.v2` | where accepted events go |
/// | `ROOM_TRANSCODE_REQUESTS_TOPIC` | `room.transcode.requests.v1` | where transcode requests go |
/// | `ROOM_UPLOADS_TOPIC` | `room.uploads.v1` | where upload-init and the sweep announce `uploading` / `abandoned` versions |
/// | `INGEST_UPLOAD_OUTBOX_INTERVAL_MS` | 250 | how often those announcements are published |
/// | `LEARNING_SESSIONS_TOPIC` | `learning.sessions.v1` | where the learning app's writes go |
/// | `ROOM_TRANSCODE_STATUS_TOPIC` | `room.transcode.status.v1` | where the versions' current statuses come from |
/// | `INGEST_ROOM_STATUS_GROUP_ID` | `ingest-room-status` | the consumer group following them |
/// | `INGEST_MATERIAL_CACHE_TTL_MS` | 2000 | how long a catalog lookup is reused |
/// | `INGEST_EVENT_ID_RETENTION_DAYS` | 30 | how long accepted event ids are remembered |
/// | `INGEST_RETRY_AFTER_SECONDS` | 2 | `Retry-After` of a 503 |
/// | `ACCOUNT_DELETION_GRACE_SECONDS` | 604800 | between `POST /account/deletion` and the purge (7 days; cancellable meanwhile) |
/// | `ACCOUNT_DELETION_SCHEDULER_INTERVAL_MS` | 5000 | how often due deletions are published to `user.deletions.v1` |
/// | `ACCOUNT_DELETION_SERVICES` | the five services | the services whose confirmations complete a receipt |
/// | `INGEST_DELETION_RECEIPTS_GROUP_ID` | `ingest-deletion-receipts` | the consumer group following `user.deletions.status.v1` |
public struct IngestConfiguration: Sendable {
    public var maxBatchEvents: Int
    public var maxBatchBytes: Int
    public var rateLimitPerSecond: Double
    public var rateLimitBurst: Int
    public var maxUSDZBytes: Int64
    public var monthlyUploadQuotaBytes: Int64
    public var readingEventsTopic: String
    public var roomTranscodeTopic: String
    /// Where the worker's statuses come from, and the consumer group that follows them.
    public var roomStatusTopic: String = Topics.roomTranscodeStatus
    public var roomStatusGroupID: String = "ingest-room-status"
    public var materialCacheTTL: Duration
    public var eventIDRetentionDays: Int
    public var unavailableRetryAfterSeconds: Int
    public var uploadTier: String = "free"
    public var uploadURLLifetime: Duration = .seconds(900)
    public var multipartThresholdBytes: Int64 = 30 << 20
    public var multipartPartBytes: Int64 = 5 << 20
    /// The most a `roomplan.json` whose size upload-init was not told (the app's own call may
    /// leave `bytes_json` out) may hold: reserved at upload-init, the real size charged at completion.
    public var maxRoomplanJsonBytes: Int64 = 5 << 20
    public var abandonUploadsAfter: Duration = .seconds(86_400)
    /// How long a repeat of upload-init with the same idempotency key answers the same version.
    public var idempotencyWindow: Duration = .seconds(86_400)
    /// How long an upload's objects must stay unchanged, all there, before the server
    /// completes it for an app that never confirmed.
    public var autoCompleteAfter: Duration = .seconds(120)
    public var uploadSweepInterval: Duration = .seconds(60)
    /// Where upload-init and the sweep announce versions (`RoomUploadEvent`), and how often.
    public var roomUploadsTopic: String = Topics.roomUploads
    public var uploadOutboxInterval: Duration = .milliseconds(250)
    /// Where the learning app's writes go (catalog, goals, sessions, review completions).
    public var learningSessionsTopic: String = Topics.learningSessions
    /// Account deletion: the grace period, how often due deletions are published, the
    /// services that must confirm, and the group following their confirmations.
    public var accountDeletionGracePeriod: Duration = .seconds(7 * 86_400)
    public var accountDeletionSchedulerInterval: Duration = .seconds(5)
    public var accountDeletionServices: [String] = IngestConfiguration.defaultDeletionServices
    public var deletionReceiptsGroupID: String = "ingest-deletion-receipts"
    /// Where upload-init's `presigned_usdz` and `presigned_json` point: Storage's signed upload
    /// on the one origin (`{APP_BASE_URL}/storage/v1/object/upload/sign/rooms/…`, served here),
    /// or presigned PUTs straight to the S3 store.
    public enum UploadURLs: String, Sendable { case origin, store }
    public var uploadURLs: UploadURLs = .store
    /// The origin the apps call (`APP_BASE_URL`: compose's gateway, `backbone dev`'s nginx).
    public var appBaseURL: String?
    /// CrowdRoom's social writes (comments, likes, profiles): their topic, and each user's
    /// rate (writes a second, and a burst) before a 429.
    public var roomInteractionsTopic: String = Topics.roomInteractions
    public var socialRateLimitPerSecond: Double = 5
    public var socialRateLimitBurst: Int = 20
    public static let defaultDeletionServices = ["ingest", "progress-projector", "analytics-aggregator", "transcode-worker",
                                                 "realtime-notifier"]
    /// Accepted timestamps: at most this far in the future …
    public var maxClockSkewAhead: TimeInterval
    /// … and at most this far in the past (matches the event-id retention).
    public var maxEventAge: TimeInterval

    public init(maxBatchEvents: Int = 500, maxBatchBytes: Int = 1 << 20, rateLimitPerSecond: Double = 10,
                rateLimitBurst: Int = 30, maxUSDZBytes: Int64 = 50 << 20, monthlyUploadQuotaBytes: Int64 = 1 << 30,
                readingEventsTopic: String = Topics.readingEvents, roomTranscodeTopic: String = Topics.roomTranscodeRequests,
                materialCacheTTL: Duration = .seconds(2), eventIDRetentionDays: Int = 30,
                unavailableRetryAfterSeconds: Int = 2, maxClockSkewAhead: TimeInterval = 10 * 60) {
        self.maxBatchEvents = maxBatchEvents
        self.maxBatchBytes = maxBatchBytes
        self.rateLimitPerSecond = rateLimitPerSecond
        self.rateLimitBurst = rateLimitBurst
        self.maxUSDZBytes = maxUSDZBytes
        self.monthlyUploadQuotaBytes = monthlyUploadQuotaBytes
        self.readingEventsTopic = readingEventsTopic
        self.roomTranscodeTopic = roomTranscodeTopic
        self.materialCacheTTL = materialCacheTTL
        self.eventIDRetentionDays = eventIDRetentionDays
        self.unavailableRetryAfterSeconds = unavailableRetryAfterSeconds
        self.maxClockSkewAhead = maxClockSkewAhead
        self.maxEventAge = TimeInterval(eventIDRetentionDays) * 86_400
    }

    /// Reads every `INGEST_*` variable into `reader` (problems are collected there).
    public static func read(from reader: inout EnvironmentReader) -> IngestConfiguration {
        let perSecond = reader.double("INGEST_RATE_LIMIT_PER_SECOND", default: 10)
        let usable = perSecond.isFinite && perSecond > 0
        if !usable { reader.fail("INGEST_RATE_LIMIT_PER_SECOND must be a positive number (got \(perSecond))") }
        let ttl = reader.milliseconds("INGEST_MATERIAL_CACHE_TTL_MS", default: .seconds(2))
        var configuration = IngestConfiguration(
            maxBatchEvents: reader.int("INGEST_MAX_BATCH_EVENTS", default: 500, range: 1...100_000),
            maxBatchBytes: reader.int("INGEST_MAX_BATCH_BYTES", default: 1 << 20, range: 1024...(64 << 20)),
            rateLimitPerSecond: usable ? perSecond : 10,
            rateLimitBurst: reader.int("INGEST_RATE_LIMIT_BURST", default: 30, range: 1...1_000_000),
            maxUSDZBytes: Int64(reader.int("INGEST_MAX_USDZ_BYTES", default: 50 << 20, range: 1...Int(Int32.max))),
            monthlyUploadQuotaBytes: Int64(reader.int("INGEST_MONTHLY_UPLOAD_QUOTA_BYTES", default: 1 << 30, range: 1...Int.max)),
            readingEventsTopic: reader.string("READING_EVENTS_TOPIC", default: Topics.readingEvents),
            roomTranscodeTopic: reader.string("ROOM_TRANSCODE_REQUESTS_TOPIC", default: Topics.roomTranscodeRequests),
            materialCacheTTL: ttl,
            eventIDRetentionDays: reader.int("INGEST_EVENT_ID_RETENTION_DAYS", default: 30, range: 1...365),
            unavailableRetryAfterSeconds: reader.int("INGEST_RETRY_AFTER_SECONDS", default: 2, range: 1...3600))
        configuration.uploadTier = reader.string("INGEST_UPLOAD_TIER", default: "free")
        configuration.uploadURLLifetime = .seconds(reader.int("INGEST_UPLOAD_URL_TTL_SECONDS", default: 900, range: 1...604_800))
        configuration.multipartThresholdBytes = Int64(reader.int("INGEST_MULTIPART_THRESHOLD_BYTES", default: 30 << 20,
                                                                  range: (5 << 20)...Int(Int32.max)))
        configuration.multipartPartBytes = Int64(reader.int("INGEST_MULTIPART_PART_BYTES", default: 5 << 20,
                                                             range: (5 << 20)...(5 << 30)))
        configuration.maxRoomplanJsonBytes = Int64(reader.int("INGEST_MAX_ROOMPLAN_JSON_BYTES", default: 5 << 20,
                                                               range: 1...Int(Int32.max)))
        configuration.abandonUploadsAfter = .seconds(reader.int("INGEST_ABANDON_UPLOADS_AFTER_SECONDS", default: 86_400,
                                                                range: 1...(90 * 86_400)))
        configuration.idempotencyWindow = .seconds(reader.int("INGEST_UPLOAD_IDEMPOTENCY_SECONDS", default: 86_400,
                                                              range: 1...(90 * 86_400)))
        configuration.autoCompleteAfter = .seconds(reader.int("INGEST_AUTO_COMPLETE_AFTER_SECONDS", default: 120, range: 0...86_400))
        configuration.uploadSweepInterval = reader.loopInterval("INGEST_UPLOAD_SWEEP_INTERVAL_MS", default: .seconds(60))
        configuration.roomUploadsTopic = reader.string("ROOM_UPLOADS_TOPIC", default: Topics.roomUploads)
        configuration.uploadOutboxInterval = reader.loopInterval("INGEST_UPLOAD_OUTBOX_INTERVAL_MS", default: .milliseconds(250))
        configuration.roomStatusTopic = reader.string("ROOM_TRANSCODE_STATUS_TOPIC", default: Topics.roomTranscodeStatus)
        configuration.roomStatusGroupID = reader.string("INGEST_ROOM_STATUS_GROUP_ID", default: "ingest-room-status")
        configuration.accountDeletionGracePeriod = .seconds(reader.int("ACCOUNT_DELETION_GRACE_SECONDS", default: 7 * 86_400,
                                                                       range: 0...(366 * 86_400)))
        configuration.accountDeletionSchedulerInterval = reader.loopInterval("ACCOUNT_DELETION_SCHEDULER_INTERVAL_MS",
                                                                             default: .seconds(5))
        let services = reader.list("ACCOUNT_DELETION_SERVICES") ?? defaultDeletionServices
        if services.isEmpty { reader.fail("ACCOUNT_DELETION_SERVICES must name at least one service") }
        configuration.accountDeletionServices = services.isEmpty ? defaultDeletionServices : services
        configuration.deletionReceiptsGroupID = reader.string("INGEST_DELETION_RECEIPTS_GROUP_ID", default: "ingest-deletion-receipts")
        configuration.appBaseURL = reader.optionalString("APP_BASE_URL").map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        let urls = reader.string("INGEST_UPLOAD_URLS", default: configuration.appBaseURL == nil ? "store" : "origin")
        if let chosen = UploadURLs(rawValue: urls) { configuration.uploadURLs = chosen } else {
            reader.fail("INGEST_UPLOAD_URLS must be origin or store (got \(urls))")
        }
        if configuration.uploadURLs == .origin, configuration.appBaseURL?.hasPrefix("http") != true {
            reader.fail("INGEST_UPLOAD_URLS=origin needs APP_BASE_URL, the origin the apps call (http://… or https://…)")
        }
        configuration.roomInteractionsTopic = reader.string("ROOM_INTERACTIONS_TOPIC", default: Topics.roomInteractions)
        configuration.socialRateLimitPerSecond = Double(reader.int("INGEST_SOCIAL_RATE_LIMIT_PER_SECOND", default: 5, range: 1...1_000_000))
        configuration.socialRateLimitBurst = reader.int("INGEST_SOCIAL_RATE_LIMIT_BURST", default: 20, range: 1...1_000_000)
        configuration.learningSessionsTopic = reader.string("LEARNING_SESSIONS_TOPIC", default: Topics.learningSessions)
        return configuration
    }
}
