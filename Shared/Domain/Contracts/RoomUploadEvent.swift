import Foundation

/// A `room.uploads.v1` record (key: room id), produced by ingest: a version's life before its
/// transcode request — `uploading` at upload-init (with the title, tags and visibility the
/// owner gave there), `abandoned` when the upload was never completed and the sweep gave its
/// bytes back. A completed upload is announced by its `room.transcode.requests.v1` record
/// instead; an abandoned version never gets one.
public struct RoomUploadEvent: Sendable, Hashable, Codable {
    public static let currentSchemaVersion = 1

    public enum Status: String, Sendable, Codable, CaseIterable {
        case uploading, abandoned
    }

    public var schemaVersion: Int
    public var roomId: String
    public var versionId: String
    public var ownerUserId: String
    public var status: Status
    public var title: String
    public var tags: [String]
    public var visibility: RoomVisibility
    /// The room's city-level label given at upload-init (seed `002_*` §8.1, P-3), if any.
    public var locationCity: String?
    /// For `uploading`: when the sweep abandons the upload if it is not completed by then.
    public var expiresAt: Date?
    public var at: Date

    public init(roomId: String, versionId: String, ownerUserId: String, status: Status, title: String, tags: [String],
                visibility: RoomVisibility, locationCity: String? = nil, expiresAt: Date? = nil, at: Date) {
        self.locationCity = locationCity
        self.schemaVersion = Self.currentSchemaVersion
        self.roomId = roomId
        self.versionId = versionId
        self.ownerUserId = ownerUserId
        self.status = status
        self.title = title
        self.tags = tags
        self.visibility = visibility
        self.expiresAt = expiresAt
        self.at = at
    }
}
