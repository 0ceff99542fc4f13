import ObjectStore
import Postgres
import Projection
import UserErasure

/// What the transcode worker erases of a user (`UserErasure`, service `transcode-worker`):
/// the objects of their rooms (everything under `rooms/{roomId}/`: manifests, GLBs,
/// thumbnails, and the sources), their jobs and unpublished statuses, and their rooms and
/// versions in the catalog, and her part of the social layer (`SocialSchema.erasure`).
public enum TranscodeErasure {
    public static let service = "transcode-worker"

    static func step(objects: (any ObjectStore)?) -> UserErasureStep {
        guard let objects else { return .sql(statements) }
        return .sql(statements) { userID, connection in
            let rooms = try await connection.query("""
                SELECT room_id FROM transcode_jobs WHERE owner_user_id = $1
                UNION SELECT room_id FROM catalog_versions WHERE owner_id = $1
                """, [userID]).map { try $0.decode(String.self, "room_id") }
            for room in rooms { try await objects.deleteAll(under: "rooms/\(room)/") }
        }
    }

    /// The social read models first: they find the user's rooms through `catalog_rooms`.
    public static let statements = SocialSchema.erasure + [
        "DELETE FROM transcode_status_outbox WHERE room_id IN (SELECT room_id FROM transcode_jobs WHERE owner_user_id = $1)",
        "DELETE FROM transcode_jobs WHERE owner_user_id = $1",
        "DELETE FROM catalog_versions WHERE owner_id = $1",
        "DELETE FROM catalog_rooms WHERE owner_id = $1",
    ]
}
