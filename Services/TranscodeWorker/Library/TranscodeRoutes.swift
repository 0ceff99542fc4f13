import Contracts
import Foundation
import HTTPRouting
import ServiceRuntime

/// `GET /rooms/versions/{versionId}`, `POST /rooms/versions/{versionId}/retry` and the same retry
/// as the app's Edge Function, `POST /functions/v1/transcode-retry` `{"version_id"}`.
///
/// The GET answers the owner, and anyone when the room is public and the version ready;
/// to everyone else the version does not exist (404, so ids cannot be probed). A version
/// between upload-init and upload-complete has no job yet: its owner gets it from the room
/// catalog (`uploading`, from `room.uploads.v1`). The retry is the owner's, for a failed version
/// only, at most `maxAttempts` attempts in all.
struct TranscodeRoutes: Sendable {
    let store: TranscodeJobStore
    /// The room catalog's versions: those the worker has no job for yet.
    let catalog: CatalogStore
    let authenticator: RequestAuthenticator
    let links: any OutputLinks
    let maxAttempts: Int
    let onRetry: @Sendable () -> Void

    func router() -> Router {
        var router = Router()
        router.get("/rooms/versions/:id") { request in try await self.details(request) }
        router.post("/rooms/versions/:id/retry") { request in try await self.retry(request) }
        router.post("/functions/v1/transcode-retry") { request in try await self.retryFunction(request) }
        return router
    }

    static let noSuchVersion = HTTPError(.notFound, code: ErrorCode.notFound.rawValue, message: "no such room version")

    func details(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await authenticator.userID(request)
        let id = request.pathParameters["id"] ?? ""
        guard let row = try await store.version(id) else { return try await pendingDetails(id, user: user) }
        guard row.ownerUserID == user || (row.visibility == .public && row.status == .ready) else { throw Self.noSuchVersion }
        var outputs: RoomVersionDetails.Outputs?
        if row.status == .ready, let manifest = row.manifestKey, let png = row.thumbnailKey, let webp = row.thumbnailWebpKey {
            let (urls, expiresAt) = try await links.presign([manifest, png, webp] + row.glbKeys)
            var layers: [String: String] = [:]
            for key in row.glbKeys {
                let name = (key.split(separator: "/").last.map(String.init) ?? key).replacingOccurrences(of: ".glb", with: "")
                layers[name] = urls[key]
            }
            outputs = .init(manifest: urls[manifest] ?? "", thumbnailPng: urls[png] ?? "", thumbnailWebp: urls[webp] ?? "",
                            layers: layers, expiresAt: expiresAt)
        }
        let failure = row.errorCode.map { RoomVersionDetails.Failure(code: ErrorCode(rawValue: $0), reason: row.reason ?? "") }
        let body = RoomVersionDetails(versionId: row.versionID, roomId: row.roomID, status: RoomVersionPhase(row.status),
                                      stage: row.stage, qualityGrade: row.qualityGrade, error: failure, attempts: row.attempts,
                                      outputs: outputs, updatedAt: row.updatedAt)
        return .json(body, encoder: ContractCoding.encoder)
    }

    /// A version the worker has no job for: still uploading (or its request not taken in yet),
    /// as the catalog has it, for its owner only.
    func pendingDetails(_ id: String, user: String) async throws -> HTTPResponse {
        var query = PostgRESTQuery()
        query.filters = [.init(column: "id", op: .eq, values: [id])]
        guard let version = try await catalog.versions(query, viewer: .user(user)).first, version.ownerID == user,
              let status = RoomVersionPhase(rawValue: version.status), status == .uploading || status == .queued else {
            throw Self.noSuchVersion
        }
        let body = RoomVersionDetails(versionId: version.versionID, roomId: version.roomID, status: status, stage: nil,
                                      qualityGrade: nil, error: nil, attempts: version.attempts, outputs: nil,
                                      updatedAt: version.updatedAt)
        return .json(body, encoder: ContractCoding.encoder)
    }

    func retry(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await authenticator.userID(request)
        let id = request.pathParameters["id"] ?? ""
        let attempt = try await retry(id, user: user)
        return .json(RoomVersionRetryAccepted(versionId: id, attempt: attempt), status: .accepted, encoder: ContractCoding.encoder)
    }

    /// The app's `transcode-retry` Edge Function (seed `002_*` §6.4): the same retry, with the
    /// seed's snake_case fields in and out.
    func retryFunction(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await authenticator.userID(request)
        let body = try request.decodeFields(TranscodeRetryFunctionRequest.self, decoder: ContractCoding.decoder)
        guard TranscodeIntake.isIdentifier(body.versionId) else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "version_id: 1–128 printable characters")
        }
        let attempt = try await retry(body.versionId, user: user)
        return .json(RoomVersionRetryAccepted(versionId: body.versionId, attempt: attempt), status: .accepted,
                     encoder: ContractCoding.snakeCaseEncoder)
    }

    /// Queues a failed version again for its owner; returns the attempt it starts.
    func retry(_ id: String, user: String) async throws -> Int {
        switch try await store.retry(id, ownerUserID: user, maxAttempts: maxAttempts) {
        case .queued(let attempt):
            onRetry()
            return attempt
        case .notFound:
            throw Self.noSuchVersion
        case .notFailed(let status):
            throw HTTPError(.conflict, code: ErrorCode.versionNotFailed.rawValue,
                            message: "only a failed version can be retried (this one is \(status))")
        case .limitReached(let attempts):
            throw HTTPError(.conflict, code: ErrorCode.retryLimitReached.rawValue,
                            message: "this version was attempted \(attempts) times, the most allowed; please contact support")
        }
    }
}

/// Short-lived GET URLs for stored outputs.
public protocol OutputLinks: Sendable {
    /// A presigned URL per key, all valid until the returned time.
    func presign(_ keys: [String]) async throws -> ([String: String], Date)
}
