import Contracts
import Foundation
import HTTPRouting
import Kafka
import ObjectStore
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime

/// `POST /rooms/versions`: the upload-complete step of a CrowdRoom scan.
///
/// Validates, reserves the version (room ownership, monthly quota), produces a
/// `RoomTranscodeRequest` to the transcode topic keyed by room id, waits for Kafka's
/// acknowledgement and answers 202 `{"versionId","status":"queued"}`. The same
/// `versionId` again gets the same answer without a second request (a version still
/// `pending` after a crash is produced again).
///
/// With an object store: only a version upload-init minted for the caller is completed (any
/// other `versionId` is 404 `NOT_FOUND`, another user's 403 `FORBIDDEN`), over the keys it
/// minted, once its objects are there with the declared sizes (a multipart `source.usdz` is
/// assembled from the reported parts first); otherwise 409 `UPLOAD_INCOMPLETE` naming the
/// object, and nothing is queued. Its bytes were reserved at upload-init and are not charged
/// again. Without a store, the keys must be the version's own.
struct RoomVersionHandler: Sendable {
    let configuration: IngestConfiguration
    let validator: RoomVersionValidator
    let store: RoomVersionStore
    let uploads: RoomUploadStore
    let objects: (any ObjectStore)?
    let limiter: UserRateLimiter
    let producer: any KafkaRecordSender
    let authenticator: RequestAuthenticator
    let metrics: MetricsRegistry
    let logger: Logger
    /// The code of the 503 when Kafka does not take the transcode request: the app's own call
    /// (`/functions/v1/upload-complete`) answers the seed's `WORKER_UNAVAILABLE`.
    var queueUnavailableCode = ErrorCode.serviceUnavailable

    func handle(_ request: HTTPRequest) async throws -> HTTPResponse {
        let userID = try await authenticator.userID(request)
        try limiter.admit(userID)
        let body = try IngestRequestDecoding.decode(RoomVersionCompleteRequest.self, from: request)
        try validator.validate(body)
        return .json(try await accept(body, userID: userID), status: .accepted, encoder: ContractCoding.encoder)
    }

    /// upload-complete of a validated request: the version queued (or its current status).
    func accept(_ body: RoomVersionCompleteRequest, userID: String) async throws -> RoomVersionAccepted {
        let now = Date()
        if let objects {
            let upload: RoomUploadStore.Upload?
            do { upload = try await uploads.upload(body.versionId) } catch { throw unavailable("room store unavailable") }
            if let upload, upload.status == "uploading" {
                return try await complete(body, upload: upload, userID: userID, objects: objects, now: now)
            }
            // Only a version upload-init minted is completed, over the keys it minted: objects
            // at keys the body names (another user's, under ids the public catalog shows) never
            // become somebody else's room.
            guard upload != nil else {
                throw HTTPError(.notFound, code: ErrorCode.notFound.rawValue,
                                message: "no such upload: upload-complete is for a version that upload-init created")
            }
        } else {
            // Without a store (the Kafka path alone) nothing was minted: the keys are at least
            // the version's own, so they can name no other version's objects.
            try requireOwnKeys(body)
        }
        let reservation: RoomVersionStore.Reservation
        do {
            reservation = try await store.reserve(body, ownerUserID: userID, quotaBytes: configuration.monthlyUploadQuotaBytes,
                                                  now: now)
        } catch {
            logger.error("room store unavailable", metadata: ["error": "\(error)"])
            throw unavailable("room store unavailable")
        }
        switch reservation {
        case .roomOwnedByAnotherUser:
            throw HTTPError(.forbidden, code: ErrorCode.forbidden.rawValue, message: "the room belongs to another user")
        case .quotaExceeded(let used):
            throw HTTPError(.forbidden, code: ErrorCode.quotaExceeded.rawValue,
                            message: "monthly upload quota exceeded (\(used) of \(configuration.monthlyUploadQuotaBytes) bytes used)")
        case .existing(let roomID, let owner, let status):
            guard owner == userID, roomID == body.roomId else {
                throw HTTPError(.forbidden, code: ErrorCode.forbidden.rawValue, message: "versionId belongs to another upload")
            }
            if status == "pending" { try await produce(body, userID: userID, now: now, releaseOnFailure: false) }
            // The version's current status, as the worker's statuses reported it.
            return accepted(body.versionId, status: RoomVersionStatus(rawValue: status) ?? .queued)
        case .reserved:
            try await produce(body, userID: userID, now: now, releaseOnFailure: true)
            metrics.increment("ingest_room_versions_total")
            return accepted(body.versionId)
        }
    }

    /// upload-complete of a version from upload-init (by its app, or by the server: `RoomUploadCompleter`).
    @discardableResult
    func complete(_ body: RoomVersionCompleteRequest, upload: RoomUploadStore.Upload, userID: String,
                  objects: any ObjectStore, now: Date) async throws -> RoomVersionAccepted {
        guard upload.ownerUserID == userID, upload.roomID == body.roomId.lowercased() else {
            throw HTTPError(.forbidden, code: ErrorCode.forbidden.rawValue, message: "versionId belongs to another upload")
        }
        guard body.source.usdzKey == upload.usdzKey, body.source.roomplanJsonKey == upload.roomplanJsonKey,
              body.source.usdzBytes == upload.usdzBytes, upload.acceptsRoomplanJson(size: body.source.roomplanJsonBytes) else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                            message: "source must name the keys and sizes upload-init answered")
        }
        let whole = try await head(upload.usdzKey, in: objects)
        if let uploadID = upload.usdzUploadID, whole != nil {
            // The scan came up in one PUT (or was assembled already): the parts are not needed.
            try? await objects.abortMultipartUpload(key: upload.usdzKey, uploadId: uploadID)
        }
        if let uploadID = upload.usdzUploadID, whole == nil {
            guard let parts = body.usdzParts, !parts.isEmpty else {
                throw incomplete("source.usdz", upload.usdzKey, "the multipart upload needs usdzParts with every part's ETag")
            }
            do {
                try await objects.completeMultipartUpload(
                    key: upload.usdzKey, uploadId: uploadID, parts: parts.map { CompletedPart(number: $0.partNumber, etag: $0.etag) })
            } catch where error.isRetriable {
                throw storageUnavailable(error)
            } catch {
                throw incomplete("source.usdz", upload.usdzKey, "the parts could not be assembled (\(error.storeCode ?? error.code.rawValue))")
            }
        }
        try await verify(upload.usdzKey, "source.usdz", bytes: upload.usdzBytes, in: objects)
        try await verify(upload.roomplanJsonKey, "roomplan.json", bytes: body.source.roomplanJsonBytes, in: objects)
        var body = body
        // The label given at upload-init travels with the request (the app's call does not repeat it).
        if body.locationCity == nil { body.locationCity = upload.locationCity }
        let promoted: Bool
        do { promoted = try await uploads.promote(body) } catch { throw unavailable("room store unavailable") }
        if promoted {
            try await produce(body, userID: userID, now: now, releaseOnFailure: false)
            metrics.increment("ingest_room_versions_total")
        }
        return accepted(body.versionId)
    }

    private func requireOwnKeys(_ body: RoomVersionCompleteRequest) throws(HTTPError) {
        let room = body.roomId.lowercased(), version = body.versionId.lowercased()
        guard body.source.usdzKey.lowercased() == RoomUploadHandler.usdzKey(room: room, version: version),
              body.source.roomplanJsonKey.lowercased() == RoomUploadHandler.roomplanKey(room: room, version: version) else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                            message: "source keys must be the version's own (rooms/{roomId}/{versionId}/source.usdz and roomplan.json)")
        }
    }

    private func head(_ key: String, in objects: any ObjectStore) async throws(HTTPError) -> ObjectInfo? {
        do { return try await objects.head(key) } catch { throw storageUnavailable(error) }
    }

    /// 409 `UPLOAD_INCOMPLETE` unless `key` holds exactly `bytes`.
    private func verify(_ key: String, _ name: String, bytes: Int64, in objects: any ObjectStore) async throws(HTTPError) {
        guard let info = try await head(key, in: objects) else { throw incomplete(name, key, "not uploaded") }
        guard info.size == bytes else { throw incomplete(name, key, "holds \(info.size) bytes, \(bytes) declared") }
    }

    private func incomplete(_ name: String, _ key: String, _ reason: String) -> HTTPError {
        HTTPError(.conflict, code: ErrorCode.uploadIncomplete.rawValue, message: "\(name) (\(key)): \(reason)")
    }

    private func storageUnavailable(_ error: ObjectStoreError) -> HTTPError {
        logger.error("object store unavailable", metadata: ["error": "\(error)"])
        return unavailable("the object store is unavailable; retry later")
    }

    /// A promoted version whose transcode request Kafka never acknowledged (the server completed
    /// it while Kafka was down, and no app will resend): produced again, as a resend of
    /// upload-complete would (the worker's intake takes a version once).
    func resend(_ body: RoomVersionCompleteRequest, userID: String, now: Date) async throws {
        try await produce(body, userID: userID, now: now, releaseOnFailure: false)
    }

    private func produce(_ body: RoomVersionCompleteRequest, userID: String, now: Date, releaseOnFailure: Bool) async throws {
        let value = try ContractCoding.encode(RoomTranscodeRequest(ownerUserId: userID, request: body, requestedAt: now))
        do {
            _ = try await producer.send(KafkaProducerRecord(topic: configuration.roomTranscodeTopic, key: Array(body.roomId.utf8),
                                                            value: value))
        } catch {
            logger.error("Kafka did not acknowledge the transcode request",
                         metadata: ["kafka.topic": configuration.roomTranscodeTopic, "error": error.description])
            if releaseOnFailure {
                do { try await store.release(body.versionId) } catch {
                    logger.warning("could not release a pending version", metadata: ["error": "\(error)"])
                }
            }
            throw HTTPError(.serviceUnavailable, code: queueUnavailableCode.rawValue,
                            message: "the transcode queue is unavailable; retry later",
                            headers: ["Retry-After": String(configuration.unavailableRetryAfterSeconds)])
        }
        do { try await store.markQueued(body.versionId) } catch {
            logger.warning("could not mark a version queued", metadata: ["error": "\(error)"])
        }
    }

    private func accepted(_ versionID: String, status: RoomVersionStatus = .queued) -> RoomVersionAccepted {
        RoomVersionAccepted(versionId: versionID, status: status)
    }

    private func unavailable(_ message: String) -> HTTPError {
        HTTPError(.serviceUnavailable, code: ErrorCode.serviceUnavailable.rawValue, message: message,
                  headers: ["Retry-After": String(configuration.unavailableRetryAfterSeconds)])
    }
}
