import Contracts
import Foundation
import HTTPTypes
import Logging
import ObjectStore

/// Completes, on the server, an upload whose app never confirmed it. CrowdRoom uploads through
/// a background `URLSession` (seed `002_*` §5.2): the system carries the PUTs on while the app is
/// suspended, and the app may be killed before it calls upload-complete. A version still
/// `uploading` whose objects are all in the store with their declared sizes — for a multipart
/// `source.usdz`, every part present (ListParts) and then assembled here — and have not changed
/// for `quiet` is completed exactly as upload-complete would: the same promotion to `pending`,
/// the same one transcode request (`RoomVersionHandler.complete`), with the title, tags,
/// visibility and redactions given at upload-init. A later upload-complete from the app answers
/// the current status. A version promoted whose transcode request Kafka did not take (down at
/// that moment) is produced again on a later pass, once it has been `pending` for `quiet`. The scan works against any S3 store (no event notifications needed).
public struct RoomUploadCompleter: Sendable {
    let uploads: RoomUploadStore
    let objects: any ObjectStore
    let versions: RoomVersionHandler
    let multipartPartBytes: Int64
    let quiet: Duration
    let logger: Logger

    /// One pass over at most `limit` uploading versions; returns the ids it completed.
    @discardableResult
    public func completeOnce(now: Date = Date(), limit: Int = 100) async throws -> [String] {
        var completed: [String] = []
        let quietSince = now.addingTimeInterval(-TimeInterval(quiet.components.seconds))
        for (upload, request) in try await uploads.uploading(pendingBefore: quietSince, limit: limit) {
            do {
                if upload.status == "pending" {
                    try await versions.resend(request, userID: upload.ownerUserID, now: now)
                    completed.append(upload.versionID)
                    logger.info("a completed upload whose transcode request Kafka had not taken was queued again",
                                metadata: ["room.version": "\(upload.versionID)"])
                    continue
                }
                guard try await isComplete(upload, quietSince: quietSince, assemble: true) else { continue }
                _ = try await versions.complete(request, upload: upload, userID: upload.ownerUserID, objects: objects, now: now)
                completed.append(upload.versionID)
                logger.info("an upload its app never confirmed was completed by the server",
                            metadata: ["room.version": "\(upload.versionID)", "room.id": "\(upload.roomID)"])
            } catch let error as HTTPError where error.code == ErrorCode.uploadIncomplete.rawValue {
                continue
            } catch {
                logger.warning("could not complete an uploaded version; will retry",
                               metadata: ["room.version": "\(upload.versionID)", "error": "\(error)"])
            }
        }
        return completed
    }

    /// Whether every object of `upload` is in the store with its declared size, unchanged since
    /// `quietSince` (nil: however recent). With `assemble`, a multipart `source.usdz` whose parts
    /// are all there (each of the size upload-init presigned) is assembled from them.
    func isComplete(_ upload: RoomUploadStore.Upload, quietSince: Date?, assemble: Bool) async throws(ObjectStoreError) -> Bool {
        func settled(_ modified: Date?) -> Bool {
            guard let quietSince else { return true }
            // An object of unknown age is not taken for quiet.
            guard let modified else { return false }
            return modified <= quietSince
        }
        guard let json = try await objects.head(upload.roomplanJsonKey), json.size == upload.roomplanJsonBytes,
              settled(json.lastModified) else { return false }
        if let usdz = try await objects.head(upload.usdzKey) {
            return usdz.size == upload.usdzBytes && settled(usdz.lastModified)
        }
        guard let uploadID = upload.usdzUploadID, let parts = try await objects.listParts(key: upload.usdzKey, uploadId: uploadID)
        else { return false }
        let expected = RoomUploadHandler.partSizes(total: upload.usdzBytes, partBytes: multipartPartBytes)
        guard parts.count == expected.count,
              zip(parts, expected).allSatisfy({ part, size in part.number == size.number && part.size == size.bytes }),
              parts.allSatisfy({ settled($0.lastModified) }) else { return false }
        guard assemble else { return true }
        _ = try await objects.completeMultipartUpload(key: upload.usdzKey, uploadId: uploadID,
                                                      parts: parts.map { CompletedPart(number: $0.number, etag: $0.etag) })
        return true
    }
}
