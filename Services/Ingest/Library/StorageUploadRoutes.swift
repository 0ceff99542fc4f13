import Auth
import BlockingCalls
import Contracts
import Foundation
import HTTPRouting
import JSON
import Lifecycle
import ObjectStore
import ServiceLogging

/// Supabase Storage's signed upload on the one origin (seed `002_*` §5.1–5.3): what upload-init's
/// `presigned_usdz` and `presigned_json` name with `INGEST_UPLOAD_URLS=origin`,
/// `{APP_BASE_URL}/storage/v1/object/upload/sign/rooms/{object}?token=…` (bucket `rooms`, the
/// object `rooms/{roomId}/{versionId}/source.usdz` or `roomplan.json`).
///
/// - `PUT` (or `POST`) with the file as the body — a background `URLSessionUploadTask` — or as
///   the `file` field of a `multipart/form-data` body — Supabase's `uploadToSignedUrl`.
/// - The body is relayed to the store while it arrives (`HTTPBodyStream` → libcurl's read
///   callback), never held; it must be exactly the size the token names (or, a `roomplan.json`
///   upload-init was not told the size of, at most what was reserved): a shorter or longer body
///   is refused and nothing is stored.
/// - 200 `{"Key":"rooms/{object}","Id"}` as Storage answers.
/// - A forged or expired token, one for another object, or a version no longer uploading: 403
///   `STORAGE_FORBIDDEN` — the project's error body with Storage's own `statusCode`, `error`
///   and `message` beside it, so Supabase's clients raise `StorageApiError` — and the app
///   re-signs with upload-init.
struct StorageUploadRoutes: Sendable {
    static let bucket = "rooms"
    static let signPrefix = "/storage/v1/object/upload/sign/\(bucket)/"

    let configuration: IngestConfiguration
    let uploads: RoomUploadStore
    let objects: any ObjectStore
    let signer: StorageURLSigner
    let logger: Logger

    func register(on router: inout Router) {
        router.streaming(.put, Self.signPrefix + "*path") { await upload($0) }
        router.streaming(.post, Self.signPrefix + "*path") { await upload($0) }
    }

    /// The upload URL of `key` on the origin `base`, its token admitting exactly `size` bytes
    /// (or, with `maxSize`, up to that many) until `lifetime` has passed.
    func url(base: String, key: String, size: Int64?, maxSize: Int64?, lifetime: Duration) -> String {
        let token = signer.token(for: key, seconds: Int(lifetime.timeInterval), size: size, maxSize: maxSize)
        let path = key.split(separator: "/").map { S3URIEncoding.encode(String($0)) }.joined(separator: "/")
        return base + Self.signPrefix + path + "?token=" + token
    }

    static func storageError(_ status: HTTPStatus, code: ErrorCode, message: String) -> HTTPError {
        HTTPError(status, code: code.rawValue, message: message)
    }

    /// An error in both shapes: the project's `{"error":{"code","message"}}` and Supabase
    /// Storage's `{"statusCode","error","message"}` (whose `error` is the project's object here;
    /// Supabase's storage clients read `statusCode` and `message` and raise).
    static func storageResponse(_ error: HTTPError) -> HTTPResponse {
        var w = JSONWriter()
        w.beginObject()
        w.key("error"); w.beginObject()
        w.key("code"); w.string(error.code)
        w.key("message"); w.string(error.message)
        w.endObject()
        w.key("statusCode"); w.string(String(error.status.rawValue))
        w.key("message"); w.string(error.message)
        w.endObject()
        var response = HTTPResponse(status: error.status, headers: ["Content-Type": "application/json"], body: w.bytes)
        for (name, value) in error.headers { response.headers.replaceOrAdd(name: name, value: value) }
        return response
    }

    static func forbidden(_ message: String) -> HTTPError {
        storageError(.forbidden, code: .storageForbidden, message: message)
    }

    func upload(_ request: HTTPRequest) async -> HTTPResponse {
        do {
            return try await store(request)
        } catch let error as HTTPError {
            return Self.storageResponse(error)
        } catch {
            return Self.storageResponse(HTTPError(.internalServerError, code: ErrorCode.internal.rawValue, message: "internal error"))
        }
    }

    private func store(_ request: HTTPRequest) async throws -> HTTPResponse {
        let key = request.path.hasPrefix(Self.signPrefix) ? String(request.path.dropFirst(Self.signPrefix.count)) : ""
        guard let token = request.query["token"], let grant = signer.grant(token, for: key) else {
            throw Self.forbidden("the upload URL's token is invalid, expired or for another object; ask upload-init again")
        }
        // The token is upload-init's for this key; the version must still be taking uploads.
        let segments = key.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 4, segments[0] == "rooms" else { throw Self.forbidden("not an upload object") }
        let found: RoomUploadStore.Upload?
        do { found = try await uploads.upload(String(segments[2])) } catch { throw unavailable("room store unavailable") }
        guard let upload = found, upload.status == "uploading", key == upload.usdzKey || key == upload.roomplanJsonKey else {
            throw Self.forbidden("the version is no longer uploading")
        }
        guard let stream = request.bodyStream else {
            throw Self.storageError(.badRequest, code: .invalidField, message: "the upload has no body")
        }
        guard let boundary = SignedUploadBody.formBoundary(request.headers["Content-Type"]) else {
            throw Self.storageError(.badRequest, code: .invalidField, message: "a multipart/form-data body needs its boundary")
        }
        let body = SignedUploadBody(stream: stream, boundary: boundary)
        if boundary != nil {
            guard await BlockingCall.run("ingest.upload-form", { body.readFormPreamble() }) else {
                throw Self.storageError(.badRequest, code: .invalidField, message: "a malformed form: \(body.failure ?? "")")
            }
        }
        // The object's size: the token's, else what the request declares.
        let declared = stream.declaredLength.map { boundary == nil ? $0 : body.formFileSize(total: $0) }
        guard let size = grant.size ?? declared else {
            throw Self.storageError(.init(411), code: .invalidField, message: "Content-Length is required for this upload")
        }
        if let declared, declared != size || !grant.admits(bytes: declared) {
            throw Self.storageError(.badRequest, code: .invalidField,
                                    message: "the file is \(declared) bytes; this URL takes \(grant.size.map { "exactly \($0)" } ?? "at most \(grant.maxSize ?? 0)")")
        }
        guard grant.admits(bytes: size) else {
            throw Self.storageError(.payloadTooLarge, code: .fileTooLarge, message: "the file is larger than this URL takes")
        }
        body.expect(size)
        let contentType = key == upload.usdzKey ? "model/vnd.usdz+zip" : "application/json"
        do {
            try await objects.put(from: body, length: size, key: key, contentType: contentType)
        } catch {
            if let failure = body.failure {
                logger.info("a signed upload was refused; nothing stored", metadata: ["storage.key": "\(key)", "reason": "\(failure)"])
                throw Self.storageError(.badRequest, code: .invalidField, message: "nothing stored: \(failure)")
            }
            logger.error("object store unavailable", metadata: ["error": "\(error)"])
            throw unavailable("the object store is unavailable; retry later")
        }
        var w = JSONWriter()
        w.beginObject()
        w.key("Key"); w.string(Self.bucket + "/" + key)
        w.key("Id"); w.string(UUID().uuidString.lowercased())
        w.endObject()
        return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: w.bytes)
    }

    private func unavailable(_ message: String) -> HTTPError {
        var error = Self.storageError(.serviceUnavailable, code: .serviceUnavailable, message: message)
        error.headers.replaceOrAdd(name: "Retry-After", value: String(configuration.unavailableRetryAfterSeconds))
        return error
    }
}

