import Contracts
import Foundation
import HTTPRouting
import ServiceRuntime

/// The CrowdRoom app's own calls, as the seed writes them (`002_*` §2.1, §5, §1.2): Supabase
/// Edge Functions under `/functions/v1/`, with snake_case fields, beside ingest's own routes
/// and answered by the same code:
///
/// - `GET quota` → `{"tier","storage":{"used","limit"},"resets_at"}`
/// - `POST upload-init` → 201 `{"room_id","version_id","status":"uploading","presigned_usdz"
///   | "presigned_usdz_parts","presigned_json","expires_at"}`; with `version_id`, re-signed
/// - `POST upload-complete` `{"version_id","redactions"}` → 202 `{"version_id","status"}`:
///   everything else (room, keys, sizes, title, tags, the parts of a multipart upload) the
///   server knows from upload-init and the store; the transcode not queued (Kafka, PostgreSQL or
///   the store unavailable) → 503 `WORKER_UNAVAILABLE` with `Retry-After`; a late one answers
///   the version's current status (`ready` once transcoded)
/// - `POST`, `GET`, `DELETE account-delete`: schedule, see, cancel the account's deletion
///
/// (`transcode-retry` is the transcode worker's, which owns the retry.)
struct EdgeFunctionRoutes: Sendable {
    let uploads: RoomUploadHandler
    let store: RoomUploadStore
    let completer: RoomUploadCompleter
    let versions: RoomVersionHandler
    let account: AccountDeletionRoutes

    func register(on router: inout Router, guarded: (@escaping HTTPHandler) -> HTTPHandler) {
        router.get("/functions/v1/quota") { try await quota($0) }
        router.post("/functions/v1/upload-init", guarded(Self.inFunctionTerms { try await uploadInit($0) }))
        router.post("/functions/v1/upload-complete", guarded(Self.inFunctionTerms { try await uploadComplete($0) }))
        router.post("/functions/v1/account-delete") { Self.snakeCased(try await account.request($0), as: AccountDeletionResponse.self) }
        router.get("/functions/v1/account-delete") { Self.snakeCased(try await account.show($0), as: AccountDeletionResponse.self) }
        router.delete("/functions/v1/account-delete") { Self.snakeCased(try await account.cancel($0), as: AccountDeletionResponse.self) }
    }

    func quota(_ request: HTTPRequest) async throws -> HTTPResponse {
        let quota = try await uploads.quota(userID: try await uploads.admitted(request))
        return .json(FunctionQuota(quota), encoder: ContractCoding.snakeCaseEncoder)
    }

    func uploadInit(_ request: HTTPRequest) async throws -> HTTPResponse {
        let userID = try await uploads.admitted(request)
        try Self.refuseCoordinates(request)
        let body = try IngestRequestDecoding.decode(FunctionUploadInitRequest.self, from: request, snakeCase: true).uploadInit
        let answer = try await uploads.initiate(body, idempotencyKey: try RoomUploadHandler.idempotencyKey(request, body),
                                                userID: userID)
        var shown = FunctionUploadInitResponse(answer.body)
        let configuration = uploads.configuration
        if shown.presignedUsdzParts != nil, configuration.uploadURLs == .origin, let base = configuration.appBaseURL {
            shown.resumableUrl = base + ResumableUploadRoutes.path
        }
        return answer.response(showing: shown, encoder: ContractCoding.snakeCaseEncoder)
    }

    func uploadComplete(_ request: HTTPRequest) async throws -> HTTPResponse {
        let userID = try await uploads.admitted(request)
        let body = try IngestRequestDecoding.decode(FunctionUploadCompleteRequest.self, from: request, snakeCase: true)
        guard UUID(uuidString: body.versionId) != nil else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "version_id must be a UUID")
        }
        if let redactions = body.redactions { try versions.validator.validateRedactions(redactions) }
        do {
            return try await complete(body, userID: userID)
        } catch var error as HTTPError where error.status == .serviceUnavailable {
            // Whatever kept the transcode from being queued — Kafka, PostgreSQL, the object store —
            // the app's answer is the seed's WORKER_UNAVAILABLE, and it resends in 60 s (§5.3).
            error.code = ErrorCode.workerUnavailable.rawValue
            error.headers.replaceOrAdd(name: "Retry-After", value: String(versions.configuration.unavailableRetryAfterSeconds))
            throw error
        }
    }

    private func complete(_ body: FunctionUploadCompleteRequest, userID: String) async throws -> HTTPResponse {
        let found: (upload: RoomUploadStore.Upload, request: RoomVersionCompleteRequest)?
        do { found = try await store.completeRequest(body.versionId.lowercased()) } catch {
            throw HTTPError(.serviceUnavailable, code: ErrorCode.serviceUnavailable.rawValue, message: "room store unavailable",
                            headers: ["Retry-After": String(versions.configuration.unavailableRetryAfterSeconds)])
        }
        guard let found else {
            throw HTTPError(.notFound, code: ErrorCode.notFound.rawValue,
                            message: "no such upload: upload-complete is for a version that upload-init created")
        }
        guard found.upload.ownerUserID == userID else {
            throw HTTPError(.forbidden, code: ErrorCode.forbidden.rawValue, message: "the version belongs to another user")
        }
        var complete = found.request
        if let redactions = body.redactions { complete.redactions = redactions }
        if found.upload.status == "uploading" {
            complete = try await completer.held(found.upload, quietSince: nil).completing(complete)
        }
        var queueing = versions
        queueing.queueUnavailableCode = .workerUnavailable
        return .json(try await queueing.accept(complete, userID: userID), status: .accepted, encoder: ContractCoding.snakeCaseEncoder)
    }

    /// The shared handlers' field names and the names the function's caller wrote.
    static let functionFieldNames = [("usdzBytes", "bytes_source"), ("roomplanJsonBytes", "bytes_json"), ("roomId", "room_id"),
                                     ("versionId", "version_id"), ("locationCity", "location_city"),
                                     ("clientUploadId", "client_upload_id"), ("textureRef", "texture_ref")]

    /// `handler`, whose errors name the fields as the app sent them (`bytes_source must be
    /// positive`, not the shared handler's `usdzBytes`).
    static func inFunctionTerms(_ handler: @escaping HTTPHandler) -> HTTPHandler {
        { request in
            do {
                return try await handler(request)
            } catch var error as HTTPError {
                for (ours, theirs) in functionFieldNames {
                    error.message = error.message.replacingOccurrences(of: ours, with: theirs)
                }
                throw error
            }
        }
    }

    /// Where a scan was made is never kept finer than the city its owner names (seed `002_*`
    /// §8.1, P-3): a body with coordinates is refused, not stripped.
    static func refuseCoordinates(_ request: HTTPRequest) throws(HTTPError) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else { return }
        if let key = object.keys.first(where: { FunctionUploadInitRequest.coordinateKeys.contains($0.lowercased()) }) {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                            message: "\(key): coordinates are never accepted; send location_city, a city's name")
        }
    }

    /// A route's camelCase answer with the seed's snake_case keys.
    static func snakeCased<Body: Codable>(_ response: HTTPResponse, as type: Body.Type) -> HTTPResponse {
        guard let body = try? ContractCoding.decode(Body.self, from: response.body) else { return response }
        var snake = response
        snake.body = (try? Array(ContractCoding.snakeCaseEncoder.encode(body))) ?? response.body
        return snake
    }
}
