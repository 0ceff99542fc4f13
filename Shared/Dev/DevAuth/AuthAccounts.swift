import Foundation
import Hashing
import Postgres

/// A user as the auth tables hold it.
struct AuthUser: Sendable {
    var id: UUID
    var email: String?
    var passwordHash: String?
    var emailConfirmedAt: Date?
    var appMetadata: String
    var userMetadata: String
    var lastSignInAt: Date?
    var createdAt: Date
    var updatedAt: Date

    static let columns = "id, email, encrypted_password, email_confirmed_at, app_metadata::text AS app_metadata, "
        + "user_metadata::text AS user_metadata, last_sign_in_at, created_at, updated_at"

    init(_ row: PostgresRow) throws {
        id = try row.decode(UUID.self, "id")
        email = try row.decode(String?.self, "email")
        passwordHash = try row.decode(String?.self, "encrypted_password")
        emailConfirmedAt = try row.decode(Date?.self, "email_confirmed_at")
        appMetadata = try row.decode(String.self, "app_metadata")
        userMetadata = try row.decode(String.self, "user_metadata")
        lastSignInAt = try row.decode(Date?.self, "last_sign_in_at")
        createdAt = try row.decode(Date.self, "created_at")
        updatedAt = try row.decode(Date.self, "updated_at")
    }
}

/// The account tables' reads and writes, each in the caller's connection (and transaction).
enum AuthAccounts {
    static func user(id: UUID, in connection: PostgresConnection) async throws -> AuthUser? {
        try await connection.query("SELECT \(AuthUser.columns) FROM auth_users WHERE id = $1", [id]).first.map(AuthUser.init)
    }

    static func user(email: String, in connection: PostgresConnection) async throws -> AuthUser? {
        try await connection.query("SELECT \(AuthUser.columns) FROM auth_users WHERE email = $1", [email]).first.map(AuthUser.init)
    }

    /// A new user, confirmed at once; nil when the e-mail address is taken.
    static func createUser(email: String?, passwordHash: String?, provider: String, userMetadata: [String: Any],
                           in connection: PostgresConnection) async throws -> AuthUser? {
        let appMetadata = DevAuthJSON.text(["provider": provider, "providers": [provider]])
        let rows = try await connection.query("""
            INSERT INTO auth_users (id, email, encrypted_password, email_confirmed_at, app_metadata, user_metadata)
            VALUES ($1, $2, $3, CASE WHEN $2::text IS NULL THEN NULL ELSE now() END, $4::jsonb, $5::jsonb)
            ON CONFLICT (email) DO NOTHING
            RETURNING \(AuthUser.columns)
            """, [UUID(), email, passwordHash, appMetadata, DevAuthJSON.text(userMetadata)])
        return try rows.first.map(AuthUser.init)
    }

    /// Adds `provider` to the user's `app_metadata.providers` (once).
    static func addProvider(_ provider: String, to userID: UUID, in connection: PostgresConnection) async throws {
        try await connection.execute("""
            UPDATE auth_users SET app_metadata = jsonb_set(app_metadata, '{providers}',
                (SELECT to_jsonb(array_agg(DISTINCT p ORDER BY p)) FROM (
                    SELECT jsonb_array_elements_text(COALESCE(app_metadata->'providers', '[]')) AS p UNION SELECT $2) AS providers))
            WHERE id = $1
            """, [userID, provider])
    }

    static func addIdentity(userID: UUID, provider: String, providerID: String, data: [String: Any], email: String?,
                            in connection: PostgresConnection) async throws {
        try await connection.execute("""
            INSERT INTO auth_identities (id, user_id, provider, provider_id, identity_data, email, last_sign_in_at)
            VALUES ($1, $2, $3, $4, $5::jsonb, $6, now())
            ON CONFLICT (provider, provider_id) DO UPDATE SET last_sign_in_at = now(), updated_at = now()
            """, [UUID(), userID, provider, providerID, DevAuthJSON.text(data), email])
    }

    static func identityUser(provider: String, providerID: String, in connection: PostgresConnection) async throws -> UUID? {
        try await connection.query("SELECT user_id FROM auth_identities WHERE provider = $1 AND provider_id = $2",
                                   [provider, providerID]).first?.decode(UUID.self, "user_id")
    }

    static func identities(of userID: UUID, in connection: PostgresConnection) async throws -> [[String: Any]] {
        let rows = try await connection.query("""
            SELECT id, user_id, provider, provider_id, identity_data::text AS identity_data, email, last_sign_in_at, created_at, updated_at
            FROM auth_identities WHERE user_id = $1 ORDER BY created_at
            """, [userID])
        return try rows.map { row in
            var identity: [String: Any] = [
                "identity_id": try row.decode(UUID.self, "id").uuidString.lowercased(),
                "id": try row.decode(String.self, "provider_id"),
                "user_id": try row.decode(UUID.self, "user_id").uuidString.lowercased(),
                "identity_data": DevAuthJSON.object(try row.decode(String.self, "identity_data")),
                "provider": try row.decode(String.self, "provider"),
                "created_at": DevAuthJSON.time(try row.decode(Date.self, "created_at")),
                "updated_at": DevAuthJSON.time(try row.decode(Date.self, "updated_at")),
            ]
            if let seen = try row.decode(Date?.self, "last_sign_in_at") { identity["last_sign_in_at"] = DevAuthJSON.time(seen) }
            if let email = try row.decode(String?.self, "email") { identity["email"] = email }
            return identity
        }
    }

    /// The user as Supabase Auth answers it (`GET /user`, a session's `user`).
    static func userJSON(_ user: AuthUser, in connection: PostgresConnection) async throws -> [String: Any] {
        var object: [String: Any] = [
            "id": user.id.uuidString.lowercased(), "aud": "authenticated", "role": "authenticated",
            "email": user.email ?? "", "phone": "",
            "app_metadata": DevAuthJSON.object(user.appMetadata), "user_metadata": DevAuthJSON.object(user.userMetadata),
            "identities": try await identities(of: user.id, in: connection),
            "created_at": DevAuthJSON.time(user.createdAt), "updated_at": DevAuthJSON.time(user.updatedAt),
            "is_anonymous": false,
        ]
        if let confirmed = user.emailConfirmedAt {
            object["email_confirmed_at"] = DevAuthJSON.time(confirmed)
            object["confirmed_at"] = DevAuthJSON.time(confirmed)
        }
        if let seen = user.lastSignInAt { object["last_sign_in_at"] = DevAuthJSON.time(seen) }
        return object
    }

    /// A new session of `userID` and its first refresh token (returned; only its hash is kept).
    static func startSession(userID: UUID, method: String, in connection: PostgresConnection) async throws -> (session: UUID, refreshToken: String) {
        let session = UUID()
        try await connection.execute("INSERT INTO auth_sessions (id, user_id, amr_method) VALUES ($1, $2, $3)", [session, userID, method])
        try await connection.execute("UPDATE auth_users SET last_sign_in_at = now() WHERE id = $1", [userID])
        return (session, try await issueRefreshToken(session: session, parent: nil, in: connection))
    }

    static func issueRefreshToken(session: UUID, parent: Int64?, in connection: PostgresConnection) async throws -> String {
        let token = Base64URL.encode(Digest.randomBytes(24))
        try await connection.execute("INSERT INTO auth_refresh_tokens (token_hash, session_id, parent) VALUES ($1, $2, $3)",
                                     [hash(token), session, parent])
        return token
    }

    static func hash(_ token: String) -> String { Digest.hex(Digest.sha256(Array(token.utf8))) }
}
