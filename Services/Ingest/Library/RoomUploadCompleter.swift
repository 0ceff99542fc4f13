import Contracts
import Foundation
import HTTPRouting
import Lifecycle
import ObjectStore
import ServiceLogging

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
        let quietSince = now.addingTimeInterval(-quiet.timeInterval)
        for (upload, request) in try await uploads.uploading(pendingBefore: quietSince, limit: limit) {
            do {
                if upload.status == "pending" {
                    try await versions.resend(request, userID: upload.ownerUserID, now: now)
                    completed.append(upload.versionID)
                    logger.info("a completed upload whose transcode request Kafka had not taken was queued again",
                                metadata: ["room.version": "\(upload.versionID)"])
                    continue
                }
                let held = try await held(upload, quietSince: quietSince)
                try await versions.complete(held.completing(request), upload: upload, userID: upload.ownerUserID,
                                            objects: objects, now: now)
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

    /// What the store holds of a complete upload, as upload-complete names it.
    struct Held: Sendable {
        /// The size of `roomplan.json` (upload-init may not have been told it).
        var roomplanJsonBytes: Int64
        /// Every part of a multipart `source.usdz` not assembled yet.
        var usdzParts: [UploadedPart]?

        /// `request` with what the store holds: an app's own call names neither.
        func completing(_ request: RoomVersionCompleteRequest) -> RoomVersionCompleteRequest {
            var request = request
            request.source.roomplanJsonBytes = roomplanJsonBytes
            if let usdzParts { request.usdzParts = usdzParts }
            return request
        }
    }

    /// What the store holds for `upload` when all of it is there: every part of a multipart
    /// `source.usdz` (ListParts), each of the size upload-init presigned, and `roomplan.json`
    /// of its declared size (or, undeclared, within what was reserved). Otherwise 409
    /// `UPLOAD_INCOMPLETE` naming what is missing or of the wrong size; with `quietSince`, an
    /// object changed after it (or of unknown age) counts as not there yet.
    func held(_ upload: RoomUploadStore.Upload, quietSince: Date?) async throws(HTTPError) -> Held {
        func settled(_ modified: Date?) -> Bool {
            guard let quietSince else { return true }
            guard let modified else { return false }
            return modified <= quietSince
        }
        func incomplete(_ what: String) -> HTTPError {
            HTTPError(.conflict, code: ErrorCode.uploadIncomplete.rawValue, message: what)
        }
        do {
            guard let json = try await objects.head(upload.roomplanJsonKey), settled(json.lastModified) else {
                throw incomplete("roomplan.json (\(upload.roomplanJsonKey)): not uploaded")
            }
            guard upload.acceptsRoomplanJson(size: json.size) else {
                throw incomplete("roomplan.json (\(upload.roomplanJsonKey)): holds \(json.size) bytes, "
                                 + (upload.roomplanJsonSizeOpen ? "at most \(upload.roomplanJsonBytes)" : "\(upload.roomplanJsonBytes) declared"))
            }
            if let usdz = try await objects.head(upload.usdzKey) {
                guard usdz.size == upload.usdzBytes, settled(usdz.lastModified) else {
                    throw incomplete("source.usdz (\(upload.usdzKey)): holds \(usdz.size) bytes, \(upload.usdzBytes) declared")
                }
                return Held(roomplanJsonBytes: json.size)
            }
            guard let uploadID = upload.usdzUploadID else { throw incomplete("source.usdz (\(upload.usdzKey)): not uploaded") }
            let parts = try await objects.listParts(key: upload.usdzKey, uploadId: uploadID) ?? []
            let expected = RoomUploadHandler.partSizes(total: upload.usdzBytes, partBytes: multipartPartBytes)
            let held = parts.filter { part in
                settled(part.lastModified) && expected.contains { $0.number == part.number && $0.bytes == part.size }
            }
            guard held.count == expected.count else {
                throw incomplete("source.usdz (\(upload.usdzKey)): \(held.count) of \(expected.count) parts uploaded")
            }
            return Held(roomplanJsonBytes: json.size, usdzParts: held.map { UploadedPart(partNumber: $0.number, etag: $0.etag) })
        } catch let error as HTTPError {
            throw error
        } catch {
            logger.error("object store unavailable", metadata: ["error": "\(error)"])
            throw HTTPError(.serviceUnavailable, code: ErrorCode.serviceUnavailable.rawValue,
                            message: "the object store is unavailable; retry later", headers: ["Retry-After": "2"])
        }
    }

    /// Whether all of `upload` is in the store (however recently written).
    func isComplete(_ upload: RoomUploadStore.Upload) async throws(HTTPError) -> Bool {
        do {
            _ = try await held(upload, quietSince: nil)
            return true
        } catch where error.code == ErrorCode.uploadIncomplete.rawValue {
            return false
        }
    }
}
