/// Error codes the apps act on (seed `000_*` §11, `002_*`). Extensible: a code is a string.
public struct ErrorCode: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
    public var description: String { rawValue }

    // Whole-request errors
    public static let unauthenticated: ErrorCode = "UNAUTHENTICATED"
    public static let forbidden: ErrorCode = "FORBIDDEN"
    public static let invalidJSON: ErrorCode = "INVALID_JSON"
    public static let invalidQuery: ErrorCode = "INVALID_QUERY"
    public static let payloadTooLarge: ErrorCode = "PAYLOAD_TOO_LARGE"
    public static let rateLimited: ErrorCode = "RATE_LIMITED"
    public static let serviceUnavailable: ErrorCode = "SERVICE_UNAVAILABLE"
    public static let notFound: ErrorCode = "NOT_FOUND"
    public static let `internal`: ErrorCode = "INTERNAL"

    // Per-event results of a reading-event batch
    public static let duplicateEvent: ErrorCode = "DUPLICATE_EVENT"
    public static let invalidEventID: ErrorCode = "INVALID_EVENT_ID"
    public static let invalidEventType: ErrorCode = "INVALID_EVENT_TYPE"
    public static let invalidPosition: ErrorCode = "INVALID_POSITION"
    public static let invalidTimestamp: ErrorCode = "INVALID_TIMESTAMP"
    public static let invalidActiveSeconds: ErrorCode = "INVALID_ACTIVE_SECONDS"
    public static let invalidTimezone: ErrorCode = "INVALID_TIMEZONE"
    public static let invalidField: ErrorCode = "INVALID_FIELD"
    public static let materialAccessDenied: ErrorCode = "MATERIAL_ACCESS_DENIED"
    public static let temporaryMaterialExpired: ErrorCode = "TEMPORARY_MATERIAL_EXPIRED"
    public static let sourceDeleted: ErrorCode = "SOURCE_DELETED"

    // CrowdRoom upload completion and transcoding
    public static let fileTooLarge: ErrorCode = "FILE_TOO_LARGE"
    public static let invalidTags: ErrorCode = "INVALID_TAGS"
    public static let redactionInvalid: ErrorCode = "REDACTION_INVALID"
    public static let quotaExceeded: ErrorCode = "QUOTA_EXCEEDED"
    /// upload-complete before the objects are in the store with their declared sizes.
    public static let uploadIncomplete: ErrorCode = "UPLOAD_INCOMPLETE"
    public static let roomTranscodeFailed: ErrorCode = "ROOM_TRANSCODE_FAILED"
    /// The transcode request could not be queued (Kafka unavailable): the app's own
    /// upload-complete answers it, and the app resends in 60 s (seed `002_*` §5.3).
    public static let workerUnavailable: ErrorCode = "WORKER_UNAVAILABLE"
    /// upload-init repeated with an `Idempotency-Key` already used for another request (422).
    public static let idempotencyKeyReused: ErrorCode = "IDEMPOTENCY_KEY_REUSED"
    /// An upload URL's token is forged, expired, or for another object (403): the app re-signs
    /// with upload-init (seed `002_*` §5.3).
    public static let storageForbidden: ErrorCode = "STORAGE_FORBIDDEN"

    // Account deletion (seed `002_*` §11 P-4)
    /// An upload from an account whose deletion is scheduled (403).
    public static let accountDeletionPending: ErrorCode = "ACCOUNT_DELETION_PENDING"
    /// `DELETE /account/deletion` after the purge started: nothing can be cancelled any more (409).
    public static let accountDeletionStarted: ErrorCode = "ACCOUNT_DELETION_STARTED"
}
