import BlockingCalls
import Foundation
import Hashing
import HTTPRouting
import Postgres
import ServiceLogging

extension DevAuthServer {
    /// The claims of the bearer's access token (this server's own, ES256), and its session,
    /// which must still exist.
    func bearer(_ request: HTTPRequest) async throws(AuthAPIError) -> (user: UUID, session: UUID) {
        guard let token = request.bearerToken else { throw AuthAPIError.noAuthorization }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64URL.decode(parts[0]), let payload = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]),
              let headerObject = (try? JSONSerialization.jsonObject(with: Data(header))) as? [String: Any],
              let claims = (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any] else {
            throw AuthAPIError.badJWT("token is malformed")
        }
        guard headerObject["alg"] as? String == "ES256", headerObject["kid"] as? String == key.kid,
              let verifier = try? PublicKey.ellipticCurveP256(x: key.x, y: key.y),
              verifier.verifyES256(signature: signature, message: Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))) else {
            throw AuthAPIError.badJWT("signature is invalid")
        }
        let exp = (claims["exp"] as? NSNumber)?.int64Value ?? 0
        guard exp > Int64(Date().timeIntervalSince1970) else { throw AuthAPIError.badJWT("token has invalid claims: token is expired") }
        guard let sub = (claims["sub"] as? String).flatMap(UUID.init(uuidString:)),
              let session = (claims["session_id"] as? String).flatMap(UUID.init(uuidString:)) else {
            throw AuthAPIError.badJWT("token has invalid claims")
        }
        let found: (Bool, Bool)
        do {
            found = try await database.withConnection { connection in
                let user = try await connection.query("SELECT 1 FROM auth_users WHERE id = $1", [sub]).first != nil
                let live = try await connection.query("SELECT 1 FROM auth_sessions WHERE id = $1", [session]).first != nil
                return (user, live)
            }
        } catch {
            throw AuthAPIError.unexpected
        }
        guard found.0 else { throw AuthAPIError.userNotFound }
        guard found.1 else { throw AuthAPIError.sessionNotFound }
        return (sub, session)
    }

    /// `bearer`, or nil when the token is good but its session or user is gone (signed out already).
    func bearerIfSignedIn(_ request: HTTPRequest) async throws(AuthAPIError) -> (user: UUID, session: UUID)? {
        do {
            return try await bearer(request)
        } catch where error.code == AuthAPIError.sessionNotFound.code || error.code == AuthAPIError.userNotFound.code {
            return nil
        }
    }

    @Sendable func getUser(_ request: HTTPRequest) async throws -> Answer {
        let (userID, _) = try await bearer(request)
        return try await database.withConnection { connection in
            guard let user = try await AuthAccounts.user(id: userID, in: connection) else { throw AuthAPIError.userNotFound }
            return .json(try await AuthAccounts.userJSON(user, in: connection))
        }
    }

    /// `PUT /user`: a new password (at least the minimum length, not the current one), metadata
    /// merged into `user_metadata` (a key set to null is removed), a new e-mail address (taken
    /// at once in dev, as with autoconfirm).
    @Sendable func updateUser(_ request: HTTPRequest) async throws -> Answer {
        let (userID, _) = try await bearer(request)
        let object = try body(request)
        var newHash: String?
        if let password = object["password"] as? String {
            try checkPassword(password)
            let current = try await database.withConnection { try await AuthAccounts.user(id: userID, in: $0) }
            if let stored = current?.passwordHash,
               await BlockingCall.run("auth.argon2", { PasswordHash.verify(password, against: stored) }) {
                throw AuthAPIError(422, "same_password", "New password should be different from the old password.")
            }
            newHash = try await hashPassword(password)
        }
        let email = try (object["email"] as? String).map { value throws(AuthAPIError) in try validEmail(value) }
        let data = object["data"] as? [String: Any]
        return try await database.withTransaction { connection in
            if let newHash {
                try await connection.execute("UPDATE auth_users SET encrypted_password = $2, updated_at = now() WHERE id = $1", [userID, newHash])
            }
            if let email {
                let taken = try await connection.query("SELECT 1 FROM auth_users WHERE email = $1 AND id <> $2", [email, userID]).first != nil
                if taken { throw AuthAPIError(422, "email_exists", "A user with this email address has already been registered") }
                try await connection.execute("UPDATE auth_users SET email = $2, email_confirmed_at = now(), updated_at = now() WHERE id = $1",
                                             [userID, email])
            }
            if let data {
                let removed = data.filter { $0.value is NSNull }.map(\.key)
                let kept = data.filter { !($0.value is NSNull) }
                try await connection.execute("""
                    UPDATE auth_users SET user_metadata = (user_metadata || $2::jsonb) - $3::text[], updated_at = now() WHERE id = $1
                    """, [userID, DevAuthJSON.text(kept), removed])
            }
            guard let user = try await AuthAccounts.user(id: userID, in: connection) else { throw AuthAPIError.userNotFound }
            return .json(try await AuthAccounts.userJSON(user, in: connection))
        }
    }

    /// `POST /logout?scope=global|local|others`: ends the user's sessions (every one, this one,
    /// the others), and with them their refresh tokens. Access tokens already given stay valid
    /// until they expire (at most an hour), as with Supabase.
    @Sendable func logout(_ request: HTTPRequest) async throws -> Answer {
        let scope = request.query["scope"] ?? "global"
        let statement = switch scope {
        case "global": "DELETE FROM auth_sessions WHERE user_id = $1 AND $2::uuid IS NOT NULL"
        case "local": "DELETE FROM auth_sessions WHERE user_id = $1 AND id = $2"
        case "others": "DELETE FROM auth_sessions WHERE user_id = $1 AND id <> $2"
        default: throw AuthAPIError.validation("Unsupported logout scope \"\(scope)\"")
        }
        if let signedIn = try await bearerIfSignedIn(request) { _ = try await database.execute(statement, [signedIn.user, signedIn.session]) }
        return .noContent
    }
}
