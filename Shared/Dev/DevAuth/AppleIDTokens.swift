import Auth
import Foundation
import Hashing
import ServiceLogging

/// Sign in with Apple's identity tokens, checked as Supabase Auth checks them: the signature
/// against Apple's key set (`AUTH_APPLE_JWKS_URL`, default Apple's, or `AUTH_APPLE_JWKS_FILE`),
/// the issuer `https://appleid.apple.com`, the expiry, the audience (one of
/// `AUTH_APPLE_CLIENT_IDS`, the apps' bundle ids) and the nonce: the token carries the SHA-256
/// (hex) of the raw nonce the app sends beside it.
public struct AppleIDTokens: Sendable {
    public static let issuer = "https://appleid.apple.com"
    public static let defaultKeySet = "https://appleid.apple.com/auth/keys"

    public let clientIDs: [String]
    let codec: JWTCodec
    let keys: JSONWebKeyring

    public init(clientIDs: [String], keySet: JSONWebKeySetSource, logger: Logger) {
        self.clientIDs = clientIDs
        keys = JSONWebKeyring(source: keySet, logger: logger)
        // The secret is random and never used: Apple's tokens are ES256 or RS256, checked with
        // the key set; an HS256 token fails its HMAC.
        codec = JWTCodec(secret: Digest.hex(Digest.randomBytes(32)), keys: keys, issuer: Self.issuer, leewaySeconds: 0, cacheCapacity: 100)
    }

    /// The verified token's subject and e-mail address; the error Supabase Auth answers otherwise.
    func verify(_ token: String, nonce: String?) async throws(AuthAPIError) -> (subject: String, email: String?, emailVerified: Bool) {
        guard !clientIDs.isEmpty else {
            throw AuthAPIError(400, "provider_disabled", "Provider (issuer \"\(Self.issuer)\") is not enabled")
        }
        do {
            _ = try await codec.verifyRefreshingKeys(token)
        } catch {
            throw AuthAPIError.oauth("invalid request", "Bad ID token")
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]),
              let claims = (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any],
              let subject = claims["sub"] as? String else {
            throw AuthAPIError.oauth("invalid request", "Bad ID token")
        }
        let audiences: [String] = switch claims["aud"] {
        case let one as String: [one]
        case let many as [Any]: many.compactMap { $0 as? String }
        default: []
        }
        guard audiences.contains(where: clientIDs.contains) else {
            throw AuthAPIError.validation("Unacceptable audience in id_token: [\(audiences.joined(separator: " "))]")
        }
        let tokenNonce = claims["nonce"] as? String
        switch (nonce.flatMap { $0.isEmpty ? nil : $0 }, tokenNonce) {
        case (nil, nil):
            break
        case (let raw?, let hashed?):
            let expected = Array(Digest.hex(Digest.sha256(Array(raw.utf8))).utf8)
            guard Digest.constantTimeEquals(expected, Array(hashed.utf8)) else {
                throw AuthAPIError.oauth("invalid request", "Nonces mismatch")
            }
        default:
            throw AuthAPIError.oauth("invalid request", "Passed nonce and nonce in id_token should either both exist or not.")
        }
        let verified: Bool = switch claims["email_verified"] {
        case let flag as Bool: flag
        case let text as String: text == "true"
        default: false
        }
        return (subject, (claims["email"] as? String)?.lowercased(), verified)
    }
}
