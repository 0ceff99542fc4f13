import Foundation

/// A `room.interactions.v1` record, produced by ingest once the write is decided: CrowdRoom's
/// social layer (seed `002_*` §1.1 Tab 2, §2.3 Flow C, §9.1). Key: the room id; a profile
/// change, which names no room, is keyed by its user id.
///
/// Each record is a complete fact (who did what to which room, with the room's owner and
/// visibility when it was written), so the room catalog (comments, likes, counts, profiles,
/// notifications) and the realtime notifier (`user:{owner}` pushes) each derive what they
/// need from it alone. `interactionId` is unique per record: a record delivered twice is
/// applied once, and it is the id of the notification the record causes.
public struct RoomInteraction: Sendable, Hashable, Codable {
    public static let currentSchemaVersion = 1

    public enum Kind: String, Sendable, Codable, CaseIterable {
        case commentCreated = "comment_created"
        case commentDeleted = "comment_deleted"
        case likeAdded = "like_added"
        case likeRemoved = "like_removed"
        case profileUpdated = "profile_updated"
        /// A fork of `roomId` (the web editor's remix, seed `002_*` §9.2): `forkRoomId`, the
        /// remixer's new room, whose first version `forkVersionId` is ready at once with copies
        /// of the outputs of the source's version `sourceVersionId` (`outputKeys`, in the fork's folder).
        case remixCreated = "remix_created"
    }

    public var schemaVersion: Int
    /// A UUID, lower-case.
    public var interactionId: String
    public var kind: Kind
    /// Who acted: the comment's author, the liker, the profile's user; for `comment_deleted`,
    /// whoever removed it (the author or the room's owner).
    public var actorId: String
    /// The room (nil for `profile_updated`), its owner and its visibility when the write was taken.
    public var roomId: String?
    public var roomOwnerId: String?
    public var roomVisibility: RoomVisibility?
    /// `comment_*`: the comment (a UUID); `comment_created` carries its author and body.
    public var commentId: String?
    public var commentAuthorId: String?
    public var body: String?
    /// `profile_updated`: the whole profile after the change.
    public var displayName: String?
    public var avatarPath: String?
    /// `remix_created`: the fork, its title and tags, the source version it copied, and the copies' keys.
    public var forkRoomId: String?
    public var forkVersionId: String?
    public var sourceVersionId: String?
    public var title: String?
    public var tags: [String]?
    public var outputKeys: [String]?
    /// `remix_created`: the source version's quality grade (from its `ready` status), which the
    /// fork's version shares; absent in records written before it was carried.
    public var sourceQualityGrade: String?
    /// When the write was taken (the comment's, like's or profile change's `created_at`/`updated_at`).
    public var at: Date

    public init(interactionId: String, kind: Kind, actorId: String, roomId: String? = nil, roomOwnerId: String? = nil,
                roomVisibility: RoomVisibility? = nil, commentId: String? = nil, commentAuthorId: String? = nil,
                body: String? = nil, displayName: String? = nil, avatarPath: String? = nil, at: Date) {
        self.schemaVersion = Self.currentSchemaVersion
        self.interactionId = interactionId
        self.kind = kind
        self.actorId = actorId
        self.roomId = roomId
        self.roomOwnerId = roomOwnerId
        self.roomVisibility = roomVisibility
        self.commentId = commentId
        self.commentAuthorId = commentAuthorId
        self.body = body
        self.displayName = displayName
        self.avatarPath = avatarPath
        self.at = at
    }

    /// The record's key: the room, or the user of a profile change.
    public var key: String { roomId ?? actorId }

    /// The longest comment body, in characters after trimming (seed `002_*` §9.1's comments).
    public static let maxBodyCharacters = 2_000
    /// The longest display name, in characters.
    public static let maxDisplayNameCharacters = 100
    /// The longest avatar path, in bytes.
    public static let maxAvatarPathBytes = 1_024

    /// The push a room's owner hears on `user:{owner}` for this record, or nil (her own action,
    /// a removal, a profile).
    public var pushEvent: String? {
        guard let owner = roomOwnerId, owner != actorId else { return nil }
        switch kind {
        case .commentCreated: return "comment_new"
        case .likeAdded: return "like_new"
        case .remixCreated: return "remix_created"
        default: return nil
        }
    }

    /// A short excerpt of a comment body for pushes and notifications: the first 80 characters.
    public static func excerpt(_ body: String?) -> String? {
        guard let body else { return nil }
        return body.count <= 80 ? body : String(body.prefix(79)) + "…"
    }
}
