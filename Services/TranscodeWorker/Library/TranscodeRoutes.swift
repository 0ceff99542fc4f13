import Contracts
import Foundation
import HTTPTypes
import ServiceRuntime

/// `GET /rooms/versions/{versionId}` and `POST /rooms/versions/{versionId}/retry`.
///
/// The GET answers the owner, and anyone when the room is public and the version ready;
/// to everyone else the version does not exist (404, so ids cannot be probed). The retry is
/// the owner's, for a failed version only, at most `maxAttempts` attempts in all.
struct TranscodeRoutes: Sendable {
    let store: TranscodeJobStore
    let authenticator: RequestAuthenticator
    let links: any OutputLinks
    let maxAttempts: Int
    let onRetry: @Sendable () -> Void

    func router() -> Router {
        var router = Router()
        router.get("/rooms/versions/:id") { request in try await self.details(request) }
        router.post("/rooms/versions/:id/retry") { request in try await self.retry(request) }
        return router
    }

    func details(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await authenticator.userID(request)
        let id = request.pathParameters["id"] ?? ""
        guard let row = try await store.version(id),
              row.ownerUserID == user || (row.visibility == .public && row.status == .ready) else {
            throw HTTPError(.notFound, code: ErrorCode.notFound.rawValue, message: "no such room version")
        }
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
        let body = RoomVersionDetails(versionId: row.versionID, roomId: row.roomID, status: row.status, stage: row.stage,
                                      qualityGrade: row.qualityGrade, error: failure, attempts: row.attempts, outputs: outputs,
                                      updatedAt: row.updatedAt)
        return .json(body, encoder: ContractCoding.encoder)
    }

    func retry(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await authenticator.userID(request)
        let id = request.pathParameters["id"] ?? ""
        switch try await store.retry(id, ownerUserID: user, maxAttempts: maxAttempts) {
        case .queued(let attempt):
            onRetry()
            return .json(RoomVersionRetryAccepted(versionId: id, attempt: attempt), status: .accepted, encoder: ContractCoding.encoder)
        case .notFound:
            throw HTTPError(.notFound, code: ErrorCode.notFound.rawValue, message: "no such room version")
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
