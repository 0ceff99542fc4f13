import Foundation
import HTTPRouting
import Postgres
import ServiceLogging

extension DevAuthServer {
    /// Rotation with GoTrue's reuse rules. The active token is spent and a new one issued. A
    /// spent token used again within `reuseInterval` of being spent, or the parent of the
    /// active one (its answer was lost), continues the session: the active token is spent in
    /// turn and a new one issued after it (only hashes are kept, so the active one cannot be
    /// given again). Any other reuse is taken as a stolen token: the session ends, every one of
    /// its refresh tokens with it.
    func refreshGrant(_ request: HTTPRequest) async throws -> Answer {
        let object = try body(request)
        guard let token = object["refresh_token"] as? String, !token.isEmpty else { throw AuthAPIError.refreshTokenNotFound }
        let outcome: Result<Answer, AuthAPIError> = try await database.withTransaction { connection in
            let rows = try await connection.query("""
                SELECT t.id, t.session_id, t.revoked, t.updated_at, s.user_id, s.amr_method
                FROM auth_refresh_tokens t JOIN auth_sessions s ON s.id = t.session_id
                WHERE t.token_hash = $1 FOR UPDATE OF s
                """, [AuthAccounts.hash(token)])
            guard let row = rows.first else { return .failure(.refreshTokenNotFound) }
            let id = try row.decode(Int64.self, "id")
            let session = try row.decode(UUID.self, "session_id")
            let user = try row.decode(UUID.self, "user_id")
            let method = try row.decode(String.self, "amr_method")
            var parent = id
            if try row.decode(Bool.self, "revoked") {
                let spent = try row.decode(Date.self, "updated_at")
                let active = try await connection.query("""
                    SELECT id, parent FROM auth_refresh_tokens WHERE session_id = $1 AND NOT revoked ORDER BY id DESC LIMIT 1
                    """, [session]).first
                let activeID = try active?.decode(Int64.self, "id")
                let isParent = try active?.decode(Int64?.self, "parent") == id
                guard let activeID, isParent || Date().timeIntervalSince(spent) < settings.reuseInterval else {
                    try await connection.execute("DELETE FROM auth_sessions WHERE id = $1", [session])
                    logger.warning("a spent refresh token was used again: the session is ended",
                                   metadata: ["auth.session": session.uuidString.lowercased()])
                    return .failure(.refreshTokenAlreadyUsed)
                }
                parent = activeID
            }
            try await connection.execute("UPDATE auth_refresh_tokens SET revoked = true, updated_at = now() WHERE id = $1", [parent])
            try await connection.execute("UPDATE auth_sessions SET updated_at = now() WHERE id = $1", [session])
            let next = try await AuthAccounts.issueRefreshToken(session: session, parent: parent, in: connection)
            return .success(try await tokens(userID: user, session: session, method: method, refreshToken: next, in: connection))
        }
        return try outcome.get()
    }
}
