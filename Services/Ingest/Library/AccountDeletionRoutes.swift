import Auth
import Contracts
import Foundation
import HTTPRouting
import Projection
import ServiceLogging
import ServiceRuntime
import UserErasure

/// `POST`, `GET` and `DELETE /account/deletion` (user token; seed `002_*` §11 P-4):
///
/// - `POST` schedules the erasure of the token's user after the grace period → 202
///   `{"requestId","status":"scheduled","purgeAt"}`; asking again answers the open request.
/// - `DELETE` cancels a scheduled request → 200 `{"requestId","status":"cancelled"}`; once the
///   purge started, 409 `ACCOUNT_DELETION_STARTED`; nothing to cancel, 404 `NOT_FOUND`.
/// - `GET` answers the latest request: its status, each service's state once the purge
///   started, and at the end the receipt. It is the one route that still takes the token of an
///   erased account, and what it answers then holds nothing personal beyond `userIdHash`.
///
/// While a request is open, `pending` refuses the user's uploads (`uploadGuard`).
struct AccountDeletionRoutes: Sendable {
    let store: AccountDeletionStore
    let pending: RevokedSubjects
    let grace: Duration
    let authenticator: RequestAuthenticator
    let logger: Logger

    func request(_ request: HTTPRequest) async throws -> HTTPResponse {
        let userID = try await userID(request)
        let open: AccountDeletionStore.Request
        do { open = try await store.schedule(userID: userID, now: Date(), grace: grace) } catch { throw unavailable(error) }
        pending.insert(hashes: [ErasedUsers.hash(userID)])
        logger.notice("account deletion scheduled", metadata: ["account.deletion": "\(open.requestID)"])
        return .json(AccountDeletionResponse(requestId: open.requestID, status: open.status, purgeAt: open.purgeAt),
                     status: .accepted, encoder: ContractCoding.encoder)
    }

    func cancel(_ request: HTTPRequest) async throws -> HTTPResponse {
        let userID = try await userID(request)
        let result: AccountDeletionStore.Cancellation
        do { result = try await store.cancel(userID: userID) } catch { throw unavailable(error) }
        switch result {
        case .cancelled(let requestID):
            pending.remove(hash: ErasedUsers.hash(userID))
            logger.notice("account deletion cancelled", metadata: ["account.deletion": "\(requestID)"])
            return .json(AccountDeletionResponse(requestId: requestID, status: .cancelled), encoder: ContractCoding.encoder)
        case .started:
            throw HTTPError(.conflict, code: ErrorCode.accountDeletionStarted.rawValue,
                            message: "the account is being erased; the deletion can no longer be cancelled")
        case .none:
            throw HTTPError(.notFound, code: ErrorCode.notFound.rawValue, message: "no account deletion is scheduled")
        }
    }

    func show(_ request: HTTPRequest) async throws -> HTTPResponse {
        let claims = try await authenticator.claims(request, acceptingRevoked: true)
        guard !claims.isService else { throw userTokenRequired }
        let hash = ErasedUsers.hash(claims.sub)
        let latest: AccountDeletionStore.Request?
        var services: [AccountDeletionResponse.ServiceState] = []
        do {
            latest = try await store.latest(userHash: hash)
            if let latest, latest.status != .scheduled { services = try await store.services(of: latest.requestID) }
        } catch {
            throw unavailable(error)
        }
        guard let latest else {
            throw HTTPError(.notFound, code: ErrorCode.notFound.rawValue, message: "no account deletion was requested")
        }
        return .json(AccountDeletionResponse(
            requestId: latest.requestID, status: latest.status, requestedAt: latest.requestedAt, purgeAt: latest.purgeAt,
            completedAt: latest.completedAt, userIdHash: latest.status == .completed ? hash : nil,
            services: latest.status == .scheduled ? nil : services), encoder: ContractCoding.encoder)
    }

    /// Wraps an upload route: a user whose deletion is open gets 403 `ACCOUNT_DELETION_PENDING`
    /// before anything is read or reserved. A request without a valid token goes on to the
    /// route, which answers its 401.
    static func uploadGuard(pending: RevokedSubjects, authenticator: RequestAuthenticator,
                            _ route: @escaping HTTPHandler) -> HTTPHandler {
        { request in
            if !pending.isEmpty, let claims = try? await authenticator.claims(request), !claims.isService, pending.contains(claims.sub) {
                throw HTTPError(.forbidden, code: ErrorCode.accountDeletionPending.rawValue,
                                message: "the account is scheduled for deletion: uploads are refused; cancel with DELETE /account/deletion")
            }
            return try await route(request)
        }
    }

    func userID(_ request: HTTPRequest) async throws(HTTPError) -> String {
        let claims = try await authenticator.claims(request)
        guard !claims.isService else { throw userTokenRequired }
        return claims.sub
    }

    var userTokenRequired: HTTPError {
        HTTPError(.forbidden, code: ErrorCode.forbidden.rawValue, message: "a user token is required")
    }

    func unavailable(_ error: any Error) -> HTTPError {
        logger.error("account deletion store unavailable", metadata: ["error": "\(error)"])
        return HTTPError(.serviceUnavailable, code: ErrorCode.serviceUnavailable.rawValue, message: "try again later",
                         headers: ["Retry-After": "2"])
    }
}
