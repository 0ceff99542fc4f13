import Foundation
import ObjectStore
import Postgres
import Projection
import UserErasure

/// What ingest erases of a user (`UserErasure`, service `ingest`): the objects of their rooms
/// in the store (everything under `rooms/{roomId}/`: sources, and the worker's outputs too),
/// unfinished multipart uploads, then their rooms, versions, quota usage, accepted event ids,
/// own materials, her comments, likes and profile (and the comments and likes on her rooms),
/// and the user id of their deletion request (its hash stays for the receipt).
enum IngestErasure {
    static let service = "ingest"

    static func step(objects: (any ObjectStore)?) -> UserErasureStep {
        guard let objects else { return .sql(statements) }
        return .sql(statements) { userID, connection in
            let rooms = try await connection.query("""
                SELECT room_id FROM rooms WHERE owner_user_id = $1
                UNION SELECT room_id FROM room_versions WHERE owner_user_id = $1
                """, [userID]).map { try $0.decode(String.self, "room_id") }
            for upload in try await connection.query("""
                SELECT usdz_key, usdz_upload_id FROM room_versions WHERE owner_user_id = $1 AND usdz_upload_id IS NOT NULL
                  AND status = 'uploading'
                """, [userID]) {
                try? await objects.abortMultipartUpload(key: try upload.decode(String.self, "usdz_key"),
                                                        uploadId: try upload.decode(String.self, "usdz_upload_id"))
            }
            // Resumable uploads (Storage's tus endpoint) not finished: their multipart uploads too.
            for upload in try await connection.query("""
                SELECT object_key, store_upload_id FROM storage_resumable_uploads WHERE owner_user_id = $1 AND NOT completed
                """, [userID]) {
                try? await objects.abortMultipartUpload(key: try upload.decode(String.self, "object_key"),
                                                        uploadId: try upload.decode(String.self, "store_upload_id"))
            }
            for room in rooms { try await objects.deleteAll(under: "rooms/\(room)/") }
        }
    }

    /// The social write side first (its likes of the user's rooms are found through `rooms`).
    static let statements = SocialWriteSchema.erasure + [
        // Announcements of the user's uploads not yet relayed (the catalog would leave them out
        // anyway, as an erased owner's).
        "DELETE FROM room_upload_outbox WHERE room_id IN (SELECT room_id FROM rooms WHERE owner_user_id = $1)",
        "DELETE FROM room_versions WHERE owner_user_id = $1 OR room_id IN (SELECT room_id FROM rooms WHERE owner_user_id = $1)",
        "DELETE FROM rooms WHERE owner_user_id = $1",
        "DELETE FROM room_upload_usage WHERE user_id = $1",
        "DELETE FROM storage_resumable_uploads WHERE owner_user_id = $1",
        "DELETE FROM ingest_accepted_events WHERE user_id = $1",
        "DELETE FROM materials WHERE owner_user_id = $1",
        "DELETE FROM account_deletion_outbox WHERE user_id = $1",
        "UPDATE account_deletions SET user_id = NULL WHERE user_id = $1",
    ] + LearningRegistry.erasure
}
