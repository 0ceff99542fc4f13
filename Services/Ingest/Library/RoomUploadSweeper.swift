import Foundation
import ObjectStore
import ServiceLogging

/// Abandoned uploads: versions still `uploading` past `INGEST_ABANDON_UPLOADS_AFTER_SECONDS`
/// lose their objects (and an unfinished multipart upload, their unfinished resumable uploads
/// with the store's multipart uploads behind them) and give their bytes back — unless
/// their objects are all there: a complete scan is never thrown away (the completer finishes it).
public struct RoomUploadSweeper: Sendable {
    let uploads: RoomUploadStore
    let objects: any ObjectStore
    let completer: RoomUploadCompleter?
    let logger: Logger

    public init(uploads: RoomUploadStore, objects: any ObjectStore, completer: RoomUploadCompleter? = nil, logger: Logger) {
        self.uploads = uploads
        self.objects = objects
        self.completer = completer
        self.logger = logger
    }

    /// One pass over at most `limit` expired uploads; returns how many were abandoned.
    /// Objects go first: a failure leaves the row for the next pass.
    @discardableResult
    public func sweepOnce(now: Date = Date(), limit: Int = 100) async throws -> Int {
        var swept = 0
        for upload in try await uploads.expired(now: now, limit: limit) {
            do {
                if let completer, try await completer.isComplete(upload) {
                    logger.notice("an expired upload whose objects are all there is kept for completion",
                                  metadata: ["room.version": "\(upload.versionID)"])
                    continue
                }
                if let uploadID = upload.usdzUploadID {
                    try await objects.abortMultipartUpload(key: upload.usdzKey, uploadId: uploadID)
                }
                for resumable in try await uploads.unfinishedResumableUploads(of: upload.versionID) {
                    try await objects.abortMultipartUpload(key: resumable.key, uploadId: resumable.storeUploadID)
                }
                try await objects.delete(upload.usdzKey)
                try await objects.delete(upload.roomplanJsonKey)
                try await uploads.abandon(upload, now: now)
                swept += 1
            } catch {
                logger.warning("could not sweep an abandoned upload", metadata: ["room.version": "\(upload.versionID)", "error": "\(error)"])
            }
        }
        return swept
    }
}
