import Foundation

/// The CrowdRoom app's own calls (seed `002_*` §2.1, §5, §6.4): Supabase Edge Functions under
/// `/functions/v1/{name}`, whose bodies use the seed's snake_case field names. Their types are
/// the camelCase contracts' own where the shapes agree, written with `ContractCoding.snakeCaseEncoder`
/// (`version_id`, `expires_at`, `texture_ref` …); where the seed gives another shape (quota,
/// upload-init) it has its own type here. `docs/app-contract.md` lists every field.

/// `GET /functions/v1/quota` 200 body: `{"tier","storage":{"used","limit"},"resets_at"}` (bytes;
/// the pre-check before the camera opens, iOS-X5).
public struct FunctionQuota: Sendable, Hashable, Codable {
    public struct Storage: Sendable, Hashable, Codable {
        public var used: Int64
        public var limit: Int64
    }

    public var tier: String
    public var storage: Storage
    public var resetsAt: Date

    public init(_ quota: RoomQuota) {
        tier = quota.tier
        storage = Storage(used: quota.usedBytes, limit: quota.limitBytes)
        resetsAt = quota.resetsAt
    }
}

/// `POST /functions/v1/upload-init` body: `{"title","tags","visibility"?,"bytes_source",
/// "bytes_json"?,"room_id"?,"version_id"?,"location_city"?,"redactions"?,"client_upload_id"?}`.
/// `version_id` re-signs a version still uploading (the app does it on `STORAGE_FORBIDDEN` and
/// 30 s before `expires_at`). Without `visibility` (the seed's call sends "title tags
/// bytes_source", §2.1) the room is `private`.
public struct FunctionUploadInitRequest: Sendable, Hashable, Codable {
    public var title: String
    public var tags: [String]
    public var visibility: RoomVisibility?
    public var bytesSource: Int64
    public var bytesJson: Int64?
    public var roomId: String?
    public var versionId: String?
    public var locationCity: String?
    public var redactions: [Redaction]?
    public var clientUploadId: String?

    /// Keys that would carry where the scan was made finer than a city: refused, never stored.
    public static let coordinateKeys: Set<String> = ["latitude", "longitude", "lat", "lng", "lon", "coordinates", "location",
                                                     "gps", "geo", "geolocation"]

    public var uploadInit: RoomUploadInitRequest {
        RoomUploadInitRequest(title: title, tags: tags, visibility: visibility ?? .private, usdzBytes: bytesSource, roomplanJsonBytes: bytesJson,
                              roomId: roomId, versionId: versionId, clientUploadId: clientUploadId, redactions: redactions,
                              locationCity: locationCity)
    }
}

/// `POST /functions/v1/upload-init` 201 (new) / 200 (re-signed) body: `{"room_id","version_id",
/// "status":"uploading","presigned_usdz","presigned_json","expires_at"}`. A `source.usdz` over
/// the multipart threshold has, beside `presigned_usdz` (one PUT still works), `presigned_usdz_parts`,
/// one URL per part (`part_size` bytes each but the last). `bytes_json` left out: `presigned_json`
/// takes any size up to `json_max_bytes`.
public struct FunctionUploadInitResponse: Sendable, Hashable, Codable {
    public struct Part: Sendable, Hashable, Codable {
        public var partNumber: Int
        public var url: String
        public var bytes: Int64
    }

    public var roomId: String
    public var versionId: String
    public var status: String
    public var presignedUsdz: String?
    public var presignedUsdzParts: [Part]?
    public var partSize: Int64?
    public var presignedJson: String?
    public var jsonMaxBytes: Int64?
    public var expiresAt: Date
    /// Storage's resumable endpoint on the origin (`{APP_BASE_URL}/storage/v1/upload/resumable`,
    /// tus), for a scan over the multipart threshold when uploads go through the origin.
    public var resumableUrl: String?

    public init(_ answer: RoomUploadInitResponse) {
        roomId = answer.roomId
        versionId = answer.versionId
        status = answer.status
        presignedUsdz = answer.usdz.url
        presignedUsdzParts = answer.usdz.parts?.map { Part(partNumber: $0.partNumber, url: $0.url, bytes: $0.bytes) }
        partSize = answer.usdz.partSize
        presignedJson = answer.roomplanJson.url
        jsonMaxBytes = answer.roomplanJson.headers["Content-Length"] == nil ? answer.roomplanJson.bytes : nil
        expiresAt = answer.expiresAt
    }
}

/// `POST /functions/v1/upload-complete` body: `{"version_id","redactions"}` (the rest the server
/// knows from upload-init); 202 `{"version_id","status"}` (`RoomVersionAccepted`, snake_case).
public struct FunctionUploadCompleteRequest: Sendable, Hashable, Codable {
    public var versionId: String
    public var redactions: [Redaction]?
}
