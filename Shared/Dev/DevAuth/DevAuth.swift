import Auth
import Foundation
import Hashing
import Postgres
import ServiceLogging
import Settings
import UserErasure

/// The embedded auth server as `backbone dev` hosts it: its settings, its signing key kept in
/// the dev folder, the key set the services verify its tokens with, and its part in account
/// deletion.
public enum DevAuth {
    /// GoTrue's port, as compose's `auth` service listens on.
    public static let defaultPort = 9999
    /// Sign in with Apple's settings and the password policy (`AUTH_*`).
    public struct Configuration: Sendable, Equatable {
        public var appleClientIDs: [String]
        public var appleKeySet: JSONWebKeySetSource
        public var minimumPasswordLength: Int

        /// `AUTH_APPLE_CLIENT_IDS` (the apps' bundle ids; none: Sign in with Apple is off),
        /// `AUTH_APPLE_JWKS_URL` (default Apple's) or `AUTH_APPLE_JWKS_FILE`, `AUTH_PASSWORD_MIN_LENGTH` (6).
        public static func read(from reader: inout EnvironmentReader) -> Configuration {
            var keySet = JSONWebKeySetSource.url(AppleIDTokens.defaultKeySet)
            switch (reader.optionalString("AUTH_APPLE_JWKS_FILE"), reader.optionalString("AUTH_APPLE_JWKS_URL")) {
            case (let file?, nil): keySet = .file(file)
            case (nil, let url?):
                if url.hasPrefix("https://") || url.hasPrefix("http://") {
                    keySet = .url(url)
                } else {
                    reader.fail("AUTH_APPLE_JWKS_URL must be an http(s) URL (got \"\(url)\")")
                }
            case (_?, _?): reader.fail("set AUTH_APPLE_JWKS_FILE or AUTH_APPLE_JWKS_URL, not both")
            case (nil, nil): break
            }
            return Configuration(appleClientIDs: reader.list("AUTH_APPLE_CLIENT_IDS") ?? [], appleKeySet: keySet,
                                 minimumPasswordLength: reader.int("AUTH_PASSWORD_MIN_LENGTH", default: 6, range: 6...72))
        }
    }

    /// Where the signing key and its published key set live in the dev folder.
    public static func keyPath(home: String) -> String { home + "/auth-signing-key.pem" }
    public static func keySetPath(home: String) -> String { home + "/auth-jwks.json" }

    /// The signing key of `home` (made on the first run) and its key set written beside it, for
    /// the services (`JWT_JWKS_FILE`).
    public static func prepareKey(home: String) throws -> SigningKey {
        let key = try SigningKey.persistent(at: keyPath(home: home))
        try Data(key.jwksJSON).write(to: URL(fileURLWithPath: keySetPath(home: home)), options: .atomic)
        return key
    }

    /// The server, given its key, the origin the apps call (the tokens' issuer is its `/auth/v1`).
    public static func server(configuration: Configuration, key: SigningKey, origin: String, database: PostgresClient,
                              logger: Logger) -> DevAuthServer {
        var settings = DevAuthServer.Settings(issuer: origin + "/auth/v1")
        settings.minimumPasswordLength = configuration.minimumPasswordLength
        let apple = AppleIDTokens(clientIDs: configuration.appleClientIDs, keySet: configuration.appleKeySet, logger: logger)
        return DevAuthServer(settings: settings, database: database, key: key, apple: apple, logger: logger)
    }

    /// Account deletion's erasure: the user, and with them (cascade) their identities (the
    /// Apple link), sessions and refresh tokens, which stop working in the same transaction.
    public static let erasureService = "auth"
    public static let erasure = UserErasureStep.sql([
        "DELETE FROM auth_users WHERE id::text = $1",
    ])
}
