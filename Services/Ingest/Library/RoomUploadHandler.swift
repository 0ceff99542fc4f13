import Contracts
import Foundation
import HTTPRouting
import Lifecycle
import ObjectStore
import ServiceLogging
import ServiceRuntime

/// `GET /rooms/quota` and `POST /rooms/uploads` (upload-init): the first two steps of the
/// CrowdRoom upload (seed `002_*` §2.1, §5; iOS-X5, iOS-X2).
///
/// upload-init validates (before any byte is sent: `INVALID_FIELD`, `INVALID_TAGS`,
/// `FILE_TOO_LARGE`), mints `versionId` (and `roomId` for a new room), reserves the bytes
/// (`QUOTA_EXCEEDED`), and answers presigned PUT URLs for `source.usdz` and `roomplan.json`
/// that accept exactly the declared sizes until `expiresAt`; a `source.usdz` over the
/// multipart threshold gets one URL per part. Asking again with the `versionId` of a version
/// still `uploading` re-signs, charging nothing; so does asking again with the same
/// idempotency key (`Idempotency-Key`, or `clientUploadId`) and the same request, within
/// `INGEST_UPLOAD_IDEMPOTENCY_SECONDS`.
struct RoomUploadHandler: Sendable {
    let configuration: IngestConfiguration
    let validator: RoomVersionValidator
    let uploads: RoomUploadStore
    let objects: any ObjectStore
    let limiter: UserRateLimiter
    let authenticator: RequestAuthenticator
    let logger: Logger
    /// Storage's signed upload on the origin (`INGEST_UPLOAD_URLS=origin`); nil: presigned S3 PUTs.
    var signedUploads: StorageUploadRoutes?

    static func usdzKey(room: String, version: String) -> String { "rooms/\(room)/\(version)/source.usdz" }
    static func roomplanKey(room: String, version: String) -> String { "rooms/\(room)/\(version)/roomplan.json" }

    func quota(_ request: HTTPRequest) async throws -> HTTPResponse {
        .json(try await quota(userID: try await admitted(request)), encoder: ContractCoding.encoder)
    }

    /// The caller's user id, within the rate limit.
    func admitted(_ request: HTTPRequest) async throws(HTTPError) -> String {
        let userID = try await authenticator.userID(request)
        try limiter.admit(userID)
        return userID
    }

    func quota(userID: String) async throws -> RoomQuota {
        let now = Date()
        let used: Int64
        do { used = try await uploads.usedBytes(userID, now: now) } catch { throw unavailable("room store unavailable") }
        return RoomQuota(tier: configuration.uploadTier, usedBytes: used, limitBytes: configuration.monthlyUploadQuotaBytes,
                         resetsAt: Self.nextMonth(now))
    }

    /// What upload-init answers: the body, its status (201 new, 200 re-signed), and whether it
    /// repeats an earlier request's version (`Idempotent-Replayed`).
    struct Answer: Sendable {
        var body: RoomUploadInitResponse
        var status: HTTPStatus
        var replayed = false

        func response() -> HTTPResponse { response(showing: body, encoder: ContractCoding.encoder) }

        /// The answer with `shown` as its body (the same answer in another shape).
        func response(showing shown: some Encodable, encoder: JSONEncoder) -> HTTPResponse {
            var response = HTTPResponse.json(shown, status: status, encoder: encoder)
            if replayed { response.headers.replaceOrAdd(name: "Idempotent-Replayed", value: "true") }
            return response
        }
    }

    func initiate(_ request: HTTPRequest) async throws -> HTTPResponse {
        let userID = try await admitted(request)
        let body = try IngestRequestDecoding.decode(RoomUploadInitRequest.self, from: request)
        return try await initiate(body, idempotencyKey: try Self.idempotencyKey(request, body), userID: userID).response()
    }

    func initiate(_ body: RoomUploadInitRequest, idempotencyKey: String?, userID: String) async throws -> Answer {
        try validate(body)
        let now = Date()
        let expiresAt = now.addingTimeInterval(configuration.uploadURLLifetime.timeInterval)

        if let versionID = body.versionId {
            return try await resign(versionID, userID: userID, expiresAt: expiresAt)
        }
        // A retried upload-init (the answer was lost) answers the version the first one made.
        let idempotency = idempotencyKey.map { key in
            RoomUploadStore.Idempotency(key: key, request: Self.fingerprint(body),
                                        expiresAt: now.addingTimeInterval(configuration.idempotencyWindow.timeInterval))
        }
        if let idempotency, let replay = try await replay(idempotency, userID: userID, expiresAt: expiresAt, now: now) {
            return replay
        }
        let roomID = body.roomId?.lowercased() ?? UUID().uuidString.lowercased()
        let versionID = UUID().uuidString.lowercased()
        var upload = RoomUploadStore.Upload(
            versionID: versionID, roomID: roomID, ownerUserID: userID, status: "uploading",
            usdzKey: Self.usdzKey(room: roomID, version: versionID), usdzBytes: body.usdzBytes,
            roomplanJsonKey: Self.roomplanKey(room: roomID, version: versionID),
            roomplanJsonBytes: body.roomplanJsonBytes ?? configuration.maxRoomplanJsonBytes,
            usdzUploadID: nil, roomplanJsonSizeOpen: body.roomplanJsonBytes == nil, locationCity: body.locationCity)
        if body.usdzBytes > configuration.multipartThresholdBytes {
            do { upload.usdzUploadID = try await objects.createMultipartUpload(key: upload.usdzKey, contentType: "model/vnd.usdz+zip") }
            catch { throw storageUnavailable(error) }
        }
        let reservation: RoomUploadStore.Reservation
        do {
            reservation = try await uploads.reserve(
                upload, request: body, quotaBytes: configuration.monthlyUploadQuotaBytes,
                expiresAt: now.addingTimeInterval(configuration.abandonUploadsAfter.timeInterval),
                idempotency: idempotency, now: now)
        } catch {
            await abortMultipart(upload)
            throw unavailable("room store unavailable")
        }
        switch reservation {
        case .reserved:
            return try response(upload, expiresAt: expiresAt, status: .created)
        case .roomOwnedByAnotherUser:
            await abortMultipart(upload)
            throw HTTPError(.forbidden, code: ErrorCode.forbidden.rawValue, message: "the room belongs to another user")
        case .quotaExceeded(let used):
            await abortMultipart(upload)
            throw HTTPError(.forbidden, code: ErrorCode.quotaExceeded.rawValue,
                            message: "monthly upload quota exceeded (\(used) of \(configuration.monthlyUploadQuotaBytes) bytes used)")
        case .idempotencyKeyTaken:
            // The same request in flight twice: the other one's version is the answer.
            await abortMultipart(upload)
            if let idempotency, let replay = try await replay(idempotency, userID: userID, expiresAt: expiresAt, now: now) {
                return replay
            }
            throw unavailable("room store unavailable")
        }
    }

    /// The longest idempotency key accepted.
    static let maxIdempotencyKeyLength = 255

    /// The `Idempotency-Key` header, else `clientUploadId` of the body; 1…255 printable ASCII
    /// characters. Both given and different: `INVALID_FIELD`.
    static func idempotencyKey(_ request: HTTPRequest, _ body: RoomUploadInitRequest) throws(HTTPError) -> String? {
        let header = request.headers["Idempotency-Key"]
        if let header, let own = body.clientUploadId, header != own {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                            message: "the Idempotency-Key header and clientUploadId differ")
        }
        guard let key = header ?? body.clientUploadId else { return nil }
        guard (1...maxIdempotencyKeyLength).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                            message: "an idempotency key is 1…\(maxIdempotencyKeyLength) printable ASCII characters")
        }
        return key
    }

    /// What makes two upload-inits the same request: every field but the key itself.
    static func fingerprint(_ body: RoomUploadInitRequest) -> String {
        var same = body
        same.clientUploadId = nil
        same.roomId = same.roomId?.lowercased()
        return (try? String(decoding: ContractCoding.encode(same), as: UTF8.self)) ?? ""
    }

    /// The answer to a repeat of an upload-init made with `idempotency.key`: the same room and
    /// version with freshly signed URLs (`Idempotent-Replayed: true`), 422
    /// `IDEMPOTENCY_KEY_REUSED` when the key came with another request, 409 when the version
    /// is past uploading; nil when no upload-init used the key.
    private func replay(_ idempotency: RoomUploadStore.Idempotency, userID: String, expiresAt: Date,
                        now: Date) async throws -> Answer? {
        let existing: (upload: RoomUploadStore.Upload, request: String)?
        do { existing = try await uploads.upload(ownerUserID: userID, idempotencyKey: idempotency.key, now: now) } catch {
            throw unavailable("room store unavailable")
        }
        guard let existing else { return nil }
        guard existing.request == idempotency.request else {
            throw HTTPError(.unprocessableEntity, code: ErrorCode.idempotencyKeyReused.rawValue,
                            message: "this Idempotency-Key was used for another upload-init request")
        }
        guard existing.upload.status == "uploading" else {
            throw HTTPError(.conflict, code: ErrorCode.invalidField.rawValue,
                            message: "the upload of this Idempotency-Key (version \(existing.upload.versionID)) is \(existing.upload.status), not uploading")
        }
        var answer = try response(existing.upload, expiresAt: expiresAt, status: .created)
        answer.replayed = true
        return answer
    }

    /// `GET /rooms/uploads/{versionId}`: what the store holds of the caller's upload, and fresh
    /// URLs for only what is missing, so a relaunched app PUTs nothing twice.
    func state(_ request: HTTPRequest) async throws -> HTTPResponse {
        let userID = try await admitted(request)
        guard let id = request.pathParameters["id"], UUID(uuidString: id) != nil else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "versionId must be a UUID")
        }
        let existing: RoomUploadStore.Upload?
        do { existing = try await uploads.upload(id.lowercased()) } catch { throw unavailable("room store unavailable") }
        guard let upload = existing, upload.ownerUserID == userID else {
            throw HTTPError(.notFound, code: ErrorCode.notFound.rawValue, message: "no such upload")
        }
        var state = RoomUploadStateResponse(roomId: upload.roomID, versionId: upload.versionID, status: upload.status)
        guard upload.status == "uploading" else { return .json(state, encoder: ContractCoding.encoder) }
        let lifetime = configuration.uploadURLLifetime
        state.expiresAt = Date().addingTimeInterval(lifetime.timeInterval)
        do {
            if let json = try await objects.head(upload.roomplanJsonKey), upload.acceptsRoomplanJson(size: json.size) {
                state.stored.append(StoredUploadObject(key: json.key, bytes: json.size, etag: json.etag))
            } else {
                state.roomplanJson = try roomplanJsonUpload(upload)
            }
            if let usdz = try await objects.head(upload.usdzKey), usdz.size == upload.usdzBytes {
                state.stored.append(StoredUploadObject(key: usdz.key, bytes: usdz.size, etag: usdz.etag))
            } else if let uploadID = upload.usdzUploadID {
                let held = Dictionary((try await objects.listParts(key: upload.usdzKey, uploadId: uploadID) ?? []).map { ($0.number, $0) },
                                      uniquingKeysWith: { first, _ in first })
                var missing: [PresignedUploadPart] = []
                for part in Self.partSizes(total: upload.usdzBytes, partBytes: configuration.multipartPartBytes) {
                    if let stored = held[part.number], stored.size == part.bytes {
                        state.stored.append(StoredUploadObject(key: upload.usdzKey, partNumber: part.number, bytes: stored.size,
                                                               etag: stored.etag))
                    } else {
                        let signed = try objects.presignUploadPart(key: upload.usdzKey, uploadId: uploadID, partNumber: part.number,
                                                                   contentLength: part.bytes, expiresIn: lifetime)
                        missing.append(PresignedUploadPart(partNumber: part.number, url: signed.url, bytes: part.bytes))
                    }
                }
                if !missing.isEmpty {
                    state.usdz = PresignedUpload(key: upload.usdzKey, bytes: upload.usdzBytes, headers: [:],
                                                 partSize: configuration.multipartPartBytes, parts: missing)
                }
            } else {
                let signed = try signedPut(key: upload.usdzKey, size: upload.usdzBytes)
                state.usdz = PresignedUpload(key: upload.usdzKey, bytes: upload.usdzBytes, headers: signed.headers, url: signed.url)
            }
        } catch {
            throw storageUnavailable(error)
        }
        return .json(state, encoder: ContractCoding.encoder)
    }

    private func resign(_ versionID: String, userID: String, expiresAt: Date) async throws -> Answer {
        let existing: RoomUploadStore.Upload?
        do { existing = try await uploads.upload(versionID.lowercased()) } catch { throw unavailable("room store unavailable") }
        guard let upload = existing, upload.ownerUserID == userID else {
            throw HTTPError(.notFound, code: ErrorCode.notFound.rawValue, message: "no such upload")
        }
        guard upload.status == "uploading" else {
            throw HTTPError(.conflict, code: ErrorCode.invalidField.rawValue, message: "the version is \(upload.status), not uploading")
        }
        return try response(upload, expiresAt: expiresAt, status: .ok)
    }

    /// The presigned PUT of `roomplan.json`: exactly its declared size, or (size not declared)
    /// any size, which completion checks against what was reserved.
    private func roomplanJsonUpload(_ upload: RoomUploadStore.Upload) throws(ObjectStoreError) -> PresignedUpload {
        let signed = try signedPut(key: upload.roomplanJsonKey, size: upload.roomplanJsonSizeOpen ? nil : upload.roomplanJsonBytes,
                                   maxSize: upload.roomplanJsonBytes)
        return PresignedUpload(key: upload.roomplanJsonKey, bytes: upload.roomplanJsonBytes, headers: signed.headers, url: signed.url)
    }

    /// A PUT of exactly `size` bytes (nil: up to `maxSize`) to `key`: Storage's signed upload on
    /// the origin, or a presigned PUT to the store (`INGEST_UPLOAD_URLS`).
    private func signedPut(key: String, size: Int64?, maxSize: Int64? = nil) throws(ObjectStoreError) -> (url: String, headers: [String: String]) {
        if configuration.uploadURLs == .origin, let origin = signedUploads, let base = configuration.appBaseURL {
            let url = origin.url(base: base, key: key, size: size, maxSize: size == nil ? maxSize : nil,
                                 lifetime: configuration.uploadURLLifetime)
            return (url, size.map { ["Content-Length": String($0)] } ?? [:])
        }
        let signed = try objects.presignPut(key: key, contentLength: size, contentType: nil, expiresIn: configuration.uploadURLLifetime)
        return (signed.url, signed.headers)
    }

    private func response(_ upload: RoomUploadStore.Upload, expiresAt: Date, status: HTTPStatus) throws -> Answer {
        let lifetime = configuration.uploadURLLifetime
        do {
            let usdz: PresignedUpload
            if let uploadID = upload.usdzUploadID {
                let partSize = configuration.multipartPartBytes
                let parts = try Self.partSizes(total: upload.usdzBytes, partBytes: partSize).map { part in
                    let signed = try objects.presignUploadPart(key: upload.usdzKey, uploadId: uploadID, partNumber: part.number,
                                                               contentLength: part.bytes, expiresIn: lifetime)
                    return PresignedUploadPart(partNumber: part.number, url: signed.url, bytes: part.bytes)
                }
                // The whole-object PUT too: the app reads `presigned_usdz` whatever the size, and one
                // PUT of the whole scan is as good as the parts (completion takes whichever arrived).
                let whole = try signedPut(key: upload.usdzKey, size: upload.usdzBytes)
                usdz = PresignedUpload(key: upload.usdzKey, bytes: upload.usdzBytes, headers: whole.headers, url: whole.url,
                                       partSize: partSize, parts: parts)
            } else {
                let signed = try signedPut(key: upload.usdzKey, size: upload.usdzBytes)
                usdz = PresignedUpload(key: upload.usdzKey, bytes: upload.usdzBytes, headers: signed.headers, url: signed.url)
            }
            let body = RoomUploadInitResponse(roomId: upload.roomID, versionId: upload.versionID, usdz: usdz,
                                              roomplanJson: try roomplanJsonUpload(upload), expiresAt: expiresAt)
            return Answer(body: body, status: status)
        } catch {
            throw storageUnavailable(error)
        }
    }

    private func validate(_ body: RoomUploadInitRequest) throws(HTTPError) {
        for (name, value) in [("roomId", body.roomId), ("versionId", body.versionId)] {
            if let value, UUID(uuidString: value) == nil {
                throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "\(name) must be a UUID")
            }
        }
        let title = body.title.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !title.isEmpty, body.title.count <= RoomVersionValidator.maxTitleLength,
              !Identifier.containsControlCharacter(body.title) else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                            message: "title must be 1…\(RoomVersionValidator.maxTitleLength) characters")
        }
        try validator.validateTags(body.tags)
        if let redactions = body.redactions { try validator.validateRedactions(redactions) }
        for (name, bytes) in [("usdzBytes", body.usdzBytes), ("roomplanJsonBytes", body.roomplanJsonBytes ?? 1)] where bytes <= 0 {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "\(name) must be positive")
        }
        if body.usdzBytes > configuration.maxUSDZBytes || (body.roomplanJsonBytes ?? 0) > configuration.maxUSDZBytes {
            throw HTTPError(.payloadTooLarge, code: ErrorCode.fileTooLarge.rawValue,
                            message: "the scan is larger than \(configuration.maxUSDZBytes) bytes")
        }
        if let city = body.locationCity { try Self.validateLocationCity(city) }
    }

    /// The longest city label accepted.
    static let maxLocationCityLength = 100

    /// A city-level label (seed `002_*` §8.1, P-3): 1…100 characters without control
    /// characters, and not coordinates ("31.23, 121.47" is refused: where the scan was made is
    /// never stored finer than the city the owner names).
    static func validateLocationCity(_ city: String) throws(HTTPError) {
        let trimmed = city.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, city.count <= maxLocationCityLength, !Identifier.containsControlCharacter(city) else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                            message: "location_city must be 1…\(maxLocationCityLength) characters")
        }
        let digits = trimmed.unicodeScalars.filter { CharacterSet.decimalDigits.contains($0) }.count
        let coordinateLike = trimmed.unicodeScalars.allSatisfy { CharacterSet(charactersIn: "0123456789.,;-+ °'\"NSEWnsew").contains($0) }
        if coordinateLike && digits >= 2 {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                            message: "location_city is a city's name, never coordinates")
        }
    }

    private func abortMultipart(_ upload: RoomUploadStore.Upload) async {
        guard let id = upload.usdzUploadID else { return }
        try? await objects.abortMultipartUpload(key: upload.usdzKey, uploadId: id)
    }

    private func storageUnavailable(_ error: any Error) -> HTTPError { configuration.storageUnavailable(error, logger: logger) }

    private func unavailable(_ message: String) -> HTTPError { configuration.unavailable(message) }

    /// The parts of a multipart upload of `total` bytes: numbered from 1, `partBytes` each but the last.
    static func partSizes(total: Int64, partBytes: Int64) -> [(number: Int, bytes: Int64)] {
        var parts: [(number: Int, bytes: Int64)] = []
        var offset: Int64 = 0
        while offset < total {
            parts.append((parts.count + 1, min(partBytes, total - offset)))
            offset += partBytes
        }
        return parts
    }

    /// The first instant of the next UTC month (when the monthly quota resets).
    static func nextMonth(_ date: Date) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let start = calendar.date(from: calendar.dateComponents([.year, .month], from: date)) ?? date
        return calendar.date(byAdding: .month, value: 1, to: start) ?? date
    }
}
