import Foundation

public enum RoomVisibility: String, Sendable, Codable, CaseIterable {
    case `public`
    case `private`
}

/// Where the client put the capture (step 2 of the upload: direct storage PUT).
public struct RoomSource: Sendable, Hashable, Codable {
    public var usdzKey: String
    public var usdzBytes: Int64
    public var roomplanJsonKey: String
    public var roomplanJsonBytes: Int64
    public var sha256: String?

    public init(usdzKey: String, usdzBytes: Int64, roomplanJsonKey: String, roomplanJsonBytes: Int64, sha256: String? = nil) {
        self.usdzKey = usdzKey
        self.usdzBytes = usdzBytes
        self.roomplanJsonKey = roomplanJsonKey
        self.roomplanJsonBytes = roomplanJsonBytes
        self.sha256 = sha256
    }
}

/// A normalised rectangle, every value in 0…1. Read as `{"x","y","width","height"}` or as Swift's
/// `Codable` writes a `CGRect` — `[[x, y], [width, height]]` (the app's `region: face.boundingBox`,
/// seed `002_*` §4.2); always written as the object.
public struct RedactionRegion: Sendable, Hashable, Codable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    enum CodingKeys: String, CodingKey { case x, y, width, height }

    public init(from decoder: any Decoder) throws {
        if var rect = try? decoder.unkeyedContainer() {
            var origin = try rect.nestedUnkeyedContainer()
            var size = try rect.nestedUnkeyedContainer()
            x = try origin.decode(Double.self)
            y = try origin.decode(Double.self)
            width = try size.decode(Double.self)
            height = try size.decode(Double.self)
            guard origin.isAtEnd, size.isAtEnd, rect.isAtEnd else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                        debugDescription: "a rectangle is [[x, y], [width, height]]"))
            }
            return
        }
        let keyed = try decoder.container(keyedBy: CodingKeys.self)
        x = try keyed.decode(Double.self, forKey: .x)
        y = try keyed.decode(Double.self, forKey: .y)
        width = try keyed.decode(Double.self, forKey: .width)
        height = try keyed.decode(Double.self, forKey: .height)
    }

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public var isValid: Bool {
        [x, y, width, height].allSatisfy { $0.isFinite && $0 >= 0 && $0 <= 1 } && width > 0 && height > 0
            && x + width <= 1 + 1e-9 && y + height <= 1 + 1e-9
    }
}

/// An on-device redaction the worker must respect (seed `002_*` iOS-X1).
public struct Redaction: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable { case face, manual }

    public var textureRef: String
    public var kind: Kind
    public var region: RedactionRegion
    public var method: String

    public init(textureRef: String, kind: Kind, region: RedactionRegion, method: String) {
        self.textureRef = textureRef
        self.kind = kind
        self.region = region
        self.method = method
    }
}

/// `POST /rooms/versions` body: step 3 of the CrowdRoom upload (upload-complete).
public struct RoomVersionCompleteRequest: Sendable, Hashable, Codable {
    public var roomId: String
    public var versionId: String
    public var title: String
    public var tags: [String]
    public var visibility: RoomVisibility
    public var source: RoomSource
    public var redactions: [Redaction]
    /// For a multipart `source.usdz`: every part's number and the `ETag` its PUT answered.
    public var usdzParts: [UploadedPart]?
    /// How the capture went (the worker grades on it).
    public var scan: ScanSummary?
    /// The city-level label the owner chose to show on the room (seed `002_*` §8.1, P-3: never
    /// coordinates), given at upload-init.
    public var locationCity: String?

    public init(roomId: String, versionId: String, title: String, tags: [String], visibility: RoomVisibility,
                source: RoomSource, redactions: [Redaction], usdzParts: [UploadedPart]? = nil, scan: ScanSummary? = nil,
                locationCity: String? = nil) {
        self.locationCity = locationCity
        self.roomId = roomId
        self.versionId = versionId
        self.title = title
        self.tags = tags
        self.visibility = visibility
        self.source = source
        self.redactions = redactions
        self.usdzParts = usdzParts
        self.scan = scan
    }
}

public enum RoomVersionStatus: String, Sendable, Codable, CaseIterable {
    case queued, transcoding, ready, failed
}

/// `POST /rooms/versions` 202 body.
public struct RoomVersionAccepted: Sendable, Hashable, Codable {
    public var versionId: String
    public var status: RoomVersionStatus
    public init(versionId: String, status: RoomVersionStatus = .queued) {
        self.versionId = versionId
        self.status = status
    }
}

/// The value of a `room.transcode.requests.v1` record (key: `roomId`).
public struct RoomTranscodeRequest: Sendable, Hashable, Codable {
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    public var roomId: String
    public var versionId: String
    public var ownerUserId: String
    public var title: String
    public var tags: [String]
    public var visibility: RoomVisibility
    public var source: RoomSource
    public var redactions: [Redaction]
    public var scan: ScanSummary?
    /// The room's city-level label (absent: none given).
    public var locationCity: String?
    public var requestedAt: Date

    public init(ownerUserId: String, request: RoomVersionCompleteRequest, requestedAt: Date) {
        self.schemaVersion = Self.currentSchemaVersion
        self.roomId = request.roomId
        self.versionId = request.versionId
        self.ownerUserId = ownerUserId
        self.title = request.title
        self.tags = request.tags
        self.visibility = request.visibility
        self.source = request.source
        self.redactions = request.redactions
        self.scan = request.scan
        self.locationCity = request.locationCity
        self.requestedAt = requestedAt
    }
}

/// The value of a `room.transcode.status.v1` record (key: `roomId`):
/// `queued` → `transcoding{stage}` → `ready{manifest…}` | `failed{code, reason}`.
public struct RoomTranscodeStatus: Sendable, Hashable, Codable {
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    public var roomId: String
    public var versionId: String
    public var ownerUserId: String
    public var visibility: RoomVisibility?
    public var status: RoomVersionStatus
    /// For `transcoding`: `downloading`, `validating`, `reading`, `exporting`, `thumbnail`…
    public var stage: String?
    public var manifestKey: String?
    public var thumbnailKey: String?
    public var glbKeys: [String]?
    public var qualityGrade: String?
    public var code: ErrorCode?
    public var reason: String?
    public var at: Date

    public init(roomId: String, versionId: String, ownerUserId: String, visibility: RoomVisibility? = nil,
                status: RoomVersionStatus, stage: String? = nil, manifestKey: String? = nil, thumbnailKey: String? = nil,
                glbKeys: [String]? = nil, qualityGrade: String? = nil, code: ErrorCode? = nil, reason: String? = nil, at: Date) {
        self.schemaVersion = Self.currentSchemaVersion
        self.roomId = roomId
        self.versionId = versionId
        self.ownerUserId = ownerUserId
        self.visibility = visibility
        self.status = status
        self.stage = stage
        self.manifestKey = manifestKey
        self.thumbnailKey = thumbnailKey
        self.glbKeys = glbKeys
        self.qualityGrade = qualityGrade
        self.code = code
        self.reason = reason
        self.at = at
    }
}
