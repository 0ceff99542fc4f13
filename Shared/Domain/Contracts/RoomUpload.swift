import Foundation

/// How the capture went (seed `002_*` §7.3): the worker grades on it.
public struct ScanSummary: Sendable, Hashable, Codable {
    public var durationSeconds: Double
    public init(durationSeconds: Double) { self.durationSeconds = durationSeconds }
}

/// One uploaded part of a multipart `source.usdz`, as upload-complete reports it.
public struct UploadedPart: Sendable, Hashable, Codable {
    public var partNumber: Int
    public var etag: String
    public init(partNumber: Int, etag: String) {
        self.partNumber = partNumber
        self.etag = etag
    }
}

/// `GET /rooms/quota` 200 body: the pre-check before the camera opens (iOS-X5). Uploads in
/// progress count as used.
public struct RoomQuota: Sendable, Hashable, Codable {
    public var tier: String
    public var usedBytes: Int64
    public var limitBytes: Int64
    public var remainingBytes: Int64
    public var resetsAt: Date

    public init(tier: String, usedBytes: Int64, limitBytes: Int64, resetsAt: Date) {
        self.tier = tier
        self.usedBytes = usedBytes
        self.limitBytes = limitBytes
        self.remainingBytes = max(0, limitBytes - usedBytes)
        self.resetsAt = resetsAt
    }
}

/// `POST /rooms/uploads` body (upload-init). `roomId` names an existing room of the caller;
/// `versionId` asks again for a version still `uploading` (fresh URLs, nothing charged again).
public struct RoomUploadInitRequest: Sendable, Hashable, Codable {
    public var title: String
    public var tags: [String]
    public var visibility: RoomVisibility
    public var usdzBytes: Int64
    /// Absent: the size is not known yet (the seed's `bytes_json` is optional); the URL then
    /// accepts up to `INGEST_MAX_ROOMPLAN_JSON_BYTES` and completion charges what it finds.
    public var roomplanJsonBytes: Int64?
    public var roomId: String?
    public var versionId: String?
    /// The app's own id of this upload (the seed's clientTaskId), an `Idempotency-Key` given in
    /// the body: a repeat answers the same room and version.
    public var clientUploadId: String?
    /// The redactions the app made before upload-init (Flow A §2.1); upload-complete may still
    /// send or replace them. A version the server completes (the app never confirmed) uses these.
    public var redactions: [Redaction]?
    /// A city-level label to show on the room (seed `002_*` §8.1, P-3); never coordinates.
    public var locationCity: String?

    public init(title: String, tags: [String], visibility: RoomVisibility, usdzBytes: Int64, roomplanJsonBytes: Int64?,
                roomId: String? = nil, versionId: String? = nil, clientUploadId: String? = nil, redactions: [Redaction]? = nil,
                locationCity: String? = nil) {
        self.locationCity = locationCity
        self.clientUploadId = clientUploadId
        self.redactions = redactions
        self.title = title
        self.tags = tags
        self.visibility = visibility
        self.usdzBytes = usdzBytes
        self.roomplanJsonBytes = roomplanJsonBytes
        self.roomId = roomId
        self.versionId = versionId
    }
}

/// One presigned part of a multipart upload.
public struct PresignedUploadPart: Sendable, Hashable, Codable {
    public var partNumber: Int
    public var url: String
    public var bytes: Int64
    public init(partNumber: Int, url: String, bytes: Int64) {
        self.partNumber = partNumber
        self.url = url
        self.bytes = bytes
    }
}

/// Where and how to PUT one object: a single `url`, or (multipart) `parts`, each PUT with
/// exactly its `bytes` and its `ETag` answer kept for upload-complete.
public struct PresignedUpload: Sendable, Hashable, Codable {
    public var key: String
    public var bytes: Int64
    public var method: String
    /// Headers to send exactly as given (`Content-Length` is signed). Without `Content-Length`
    /// (a `roomplan.json` upload-init was not told the size of), `bytes` is the most the
    /// object may hold, and completion takes the size it finds.
    public var headers: [String: String]
    public var url: String?
    public var partSize: Int64?
    public var parts: [PresignedUploadPart]?

    public init(key: String, bytes: Int64, headers: [String: String], url: String? = nil, partSize: Int64? = nil,
                parts: [PresignedUploadPart]? = nil) {
        self.key = key
        self.bytes = bytes
        self.method = "PUT"
        self.headers = headers
        self.url = url
        self.partSize = partSize
        self.parts = parts
    }
}

/// `POST /rooms/uploads` 201 body.
public struct RoomUploadInitResponse: Sendable, Hashable, Codable {
    public var roomId: String
    public var versionId: String
    public var status: String
    public var usdz: PresignedUpload
    public var roomplanJson: PresignedUpload
    public var expiresAt: Date

    public init(roomId: String, versionId: String, usdz: PresignedUpload, roomplanJson: PresignedUpload, expiresAt: Date) {
        self.roomId = roomId
        self.versionId = versionId
        self.status = "uploading"
        self.usdz = usdz
        self.roomplanJson = roomplanJson
        self.expiresAt = expiresAt
    }
}

/// An object, or a part of a multipart `source.usdz`, the store already holds.
public struct StoredUploadObject: Sendable, Hashable, Codable {
    public var key: String
    /// Set for a part of a multipart upload.
    public var partNumber: Int?
    public var bytes: Int64
    /// The entity tag without quotes (a part's is what upload-complete's `usdzParts` needs).
    public var etag: String

    public init(key: String, partNumber: Int? = nil, bytes: Int64, etag: String) {
        self.key = key
        self.partNumber = partNumber
        self.bytes = bytes
        self.etag = etag
    }
}

/// `GET /rooms/uploads/{versionId}`: where an upload stands, for an app relaunched mid-upload —
/// what the store holds, and fresh URLs for only what is missing (`usdz`/`roomplanJson` nil when
/// that object is complete, `parts` only the missing ones). Past `uploading`, only the status.
public struct RoomUploadStateResponse: Sendable, Hashable, Codable {
    public var roomId: String
    public var versionId: String
    public var status: String
    public var stored: [StoredUploadObject]
    public var usdz: PresignedUpload?
    public var roomplanJson: PresignedUpload?
    public var expiresAt: Date?

    public init(roomId: String, versionId: String, status: String, stored: [StoredUploadObject] = [],
                usdz: PresignedUpload? = nil, roomplanJson: PresignedUpload? = nil, expiresAt: Date? = nil) {
        self.roomId = roomId
        self.versionId = versionId
        self.status = status
        self.stored = stored
        self.usdz = usdz
        self.roomplanJson = roomplanJson
        self.expiresAt = expiresAt
    }
}
