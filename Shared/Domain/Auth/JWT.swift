import Contracts
import Foundation
import Hashing

/// The claims this system reads from a token. `sub` is the user id; `role: "service"` (or
/// Supabase's `service_role`) marks a service token (catalog maintenance); `role: "anon"` is a
/// Supabase project's anon key, which names the app and no user (`sub` is empty).
public struct JWTClaims: Sendable, Equatable, Codable {
    public var sub: String
    public var exp: Int64?
    public var nbf: Int64?
    public var iat: Int64?
    public var role: String?

    public init(sub: String, exp: Int64? = nil, nbf: Int64? = nil, iat: Int64? = nil, role: String? = nil) {
        self.sub = sub
        self.exp = exp
        self.nbf = nbf
        self.iat = iat
        self.role = role
    }

    public var isService: Bool { role == "service" || role == "service_role" }

    /// The project's anon key: signed like the sessions, but for no user. Only callers that
    /// ask for it (`acceptingAnonymous`) ever see such claims.
    public var isAnonymous: Bool { role == "anon" }
}

public struct AuthError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let malformed = Code(rawValue: "malformed")
        public static let unsupportedAlgorithm = Code(rawValue: "unsupported_algorithm")
        public static let badSignature = Code(rawValue: "bad_signature")
        public static let expired = Code(rawValue: "expired")
        public static let notYetValid = Code(rawValue: "not_yet_valid")
        public static let missingSubject = Code(rawValue: "missing_subject")
        /// `sub` is too long or holds whitespace or control characters (see `Identifier`).
        public static let invalidSubject = Code(rawValue: "invalid_subject")
        /// A user token of an account this service erased (`RevokedSubjects`).
        public static let revokedSubject = Code(rawValue: "account_deleted")
        /// The `kid` of an ES256 or RS256 token is not in the key set (nor after reading it again).
        public static let unknownKey = Code(rawValue: "unknown_key")
        /// The key the `kid` names cannot check tokens of the header's `alg` (another key type or
        /// curve, a short RSA key, a key whose own `alg` differs).
        public static let keyMismatch = Code(rawValue: "key_mismatch")
        /// A user token whose `iss` is not `JWT_ISSUER`.
        public static let wrongIssuer = Code(rawValue: "wrong_issuer")
        /// A user token whose `aud` does not include `JWT_AUDIENCE`.
        public static let wrongAudience = Code(rawValue: "wrong_audience")
        /// Supabase's anon key (`role: "anon"`): it names the app, not a signed-in user.
        public static let anonymousKey = Code(rawValue: "anon_key")
    }

    public var code: Code
    public var message: String
    public var isRetriable: Bool { false }
    public var description: String { "token \(code.rawValue): \(message)" }

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// Verifies JSON Web Tokens, and signs this system's own (HS256).
///
/// Accepted: `HS256` with the shared secret (`JWT_SECRET`: this system's tokens, or a Supabase
/// project's legacy JWT secret) and, with a key set (`keys`: `JWT_JWKS_FILE` or `JWT_JWKS_URL`),
/// `ES256` and `RS256` checked with the key the header's `kid` names, which must be a key for
/// that very algorithm (`JSONWebKeySet`). `alg: none` and every other algorithm are refused
/// before the signature is looked at; the HMAC is compared in constant time, ECDSA and RSA
/// signatures are checked by OpenSSL. A user token must carry `issuer` (`iss`) and `audience`
/// (`aud`, a string or an array) when these are set. The project's anon key (`role: "anon"`)
/// is refused unless the caller accepts anonymous clients. `exp` and `nbf` are honoured with a small
/// leeway for clock skew, on every call. The claims of a token whose signature was verified
/// are kept (up to `cacheCapacity` tokens), so a client sending the same token again costs a
/// dictionary lookup instead of a signature check and a JSON parse.
public struct JWTCodec: Sendable {
    public let secret: [UInt8]
    public let leeway: Int64
    /// Subjects whose user tokens are refused (erased accounts); service tokens are not affected.
    public let revoked: RevokedSubjects
    /// The public keys of ES256 and RS256 tokens; nil: HS256 only.
    public let keys: JSONWebKeyring?
    /// The `iss` user tokens must have (`JWT_ISSUER`); nil: not checked.
    public let issuer: String?
    /// The `aud` user tokens must include (`JWT_AUDIENCE`); nil: not checked.
    public let audience: String?
    private let verified: VerifiedTokenCache

    public init(secret: String, keys: JSONWebKeyring? = nil, issuer: String? = nil, audience: String? = nil,
                leewaySeconds: Int64 = 30, cacheCapacity: Int = 10_000) {
        self.secret = Array(secret.utf8)
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.leeway = leewaySeconds
        self.verified = VerifiedTokenCache(capacity: cacheCapacity)
        self.revoked = RevokedSubjects()
    }

    /// `jku`, `x5u` and `jwk` are not read: keys come from the configured set only, never from
    /// where a token says.
    private struct Header: Codable { var alg: String; var kid: String?; var crit: [String]? }

    /// `acceptingRevoked`: also the token of an erased account (the one route that answers
    /// such a user: their deletion receipt). `acceptingAnonymous`: also the project's anon key
    /// (claims with `isAnonymous` and an empty `sub`), for a caller that decides itself what
    /// an anonymous client may do (the Realtime socket, whose SDKs open it with the anon key);
    /// everywhere else it is refused with `anonymousKey`.
    public func verify(_ token: String, now: Date = Date(), acceptingRevoked: Bool = false,
                       acceptingAnonymous: Bool = false) throws(AuthError) -> JWTClaims {
        let claims: JWTClaims
        if let known = verified.claims(for: token, keyGeneration: keys?.generation ?? 0) {
            claims = known
        } else {
            let checked = try verifiedClaims(token)
            claims = checked.claims
            verified.store(checked.claims, keyGeneration: checked.keyGeneration, for: token)
        }
        let nowSeconds = Int64(now.timeIntervalSince1970)
        // Written so that no claim value (Int64.max, Int64.min) can overflow.
        if let exp = claims.exp, nowSeconds - leeway >= exp {
            throw AuthError(.expired, "token expired")
        }
        if let nbf = claims.nbf, nowSeconds + leeway < nbf {
            throw AuthError(.notYetValid, "token not valid yet")
        }
        if claims.isAnonymous {
            guard acceptingAnonymous else {
                throw AuthError(.anonymousKey, "the anon key identifies the app, not a user: send the signed-in user's access token")
            }
            return claims
        }
        if !acceptingRevoked, !claims.isService, revoked.contains(claims.sub) {
            throw AuthError(.revokedSubject, "the account was deleted")
        }
        return claims
    }

    /// `verify`; when the token names a key the set does not hold, waits for the set to be read
    /// again (at most once per `JSONWebKeyring.refreshInterval`, shared by every request that
    /// waits) and verifies once more, so a token signed with a key the provider has just added
    /// is accepted on its first request. `verify` alone starts that reading without waiting.
    public func verifyRefreshingKeys(_ token: String, now: Date = Date(), acceptingRevoked: Bool = false,
                                     acceptingAnonymous: Bool = false) async throws(AuthError) -> JWTClaims {
        do {
            return try verify(token, now: now, acceptingRevoked: acceptingRevoked, acceptingAnonymous: acceptingAnonymous)
        } catch {
            guard error.code == .unknownKey, let keys else { throw error }
            // The fetch the failed lookup started, or nil when one ran too recently (then the
            // set may still have changed since the lookup: verifying again costs a parse).
            await keys.refresh()?.value
            return try verify(token, now: now, acceptingRevoked: acceptingRevoked, acceptingAnonymous: acceptingAnonymous)
        }
    }

    /// The claims of a token with a valid signature and a usable subject (times not checked),
    /// and the generation of the key set whose key checked it (nil: the secret did).
    private func verifiedClaims(_ token: String) throws(AuthError) -> (claims: JWTClaims, keyGeneration: Int?) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw AuthError(.malformed, "a token has three dot-separated parts")
        }
        guard let headerBytes = Base64URL.decode(parts[0]),
              let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)) else {
            throw AuthError(.malformed, "header is not base64url JSON")
        }
        guard let algorithm = JWTAlgorithm(rawValue: header.alg) else {
            throw AuthError(.unsupportedAlgorithm, "only HS256, ES256 and RS256 are accepted")
        }
        // RFC 7515 §4.1.11: an extension marked critical that is not understood must be refused,
        // and none is understood here.
        guard header.crit == nil else {
            throw AuthError(.malformed, "critical header extensions (crit) are not supported")
        }
        guard let signature = Base64URL.decode(parts[2]) else {
            throw AuthError(.malformed, "signature is not base64url")
        }
        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        let keyGeneration = try checkSignature(signature, of: signingInput, algorithm: algorithm, kid: header.kid)
        guard let payloadBytes = Base64URL.decode(parts[1]),
              let object = try? JSONSerialization.jsonObject(with: Data(payloadBytes)) as? [String: Any] else {
            throw AuthError(.malformed, "payload is not a JSON object")
        }
        let role = object["role"] as? String
        // Signed like a user's session but for the app, and without `sub` (nor the sessions'
        // `iss` and `aud`): `verify` refuses it unless the caller accepts anonymous clients,
        // saying what it is rather than "no subject", for the developer who sent it by mistake.
        if role == "anon" {
            return (JWTClaims(sub: "", exp: Self.integer(object["exp"]), nbf: Self.integer(object["nbf"]),
                              iat: Self.integer(object["iat"]), role: role), keyGeneration)
        }
        let sub: String
        if let subject = object["sub"] as? String, !subject.isEmpty {
            sub = subject
        } else if role == "service_role" {
            sub = "service_role"  // Supabase's service_role key names no subject.
        } else {
            throw AuthError(.missingSubject, "token has no subject")
        }
        guard Identifier.isAcceptable(sub) else {
            throw AuthError(.invalidSubject, "subject must be at most \(Identifier.maxUTF8Length) bytes without whitespace or control characters")
        }
        let claims = JWTClaims(sub: sub, exp: Self.integer(object["exp"]), nbf: Self.integer(object["nbf"]),
                               iat: Self.integer(object["iat"]), role: role)
        if !claims.isService { try checkIssuerAndAudience(object) }
        return (claims, keyGeneration)
    }

    /// Throws unless `signature` signs `input` under `algorithm`; the key set's generation for a
    /// key of the set, nil for the secret.
    private func checkSignature(_ signature: [UInt8], of input: [UInt8], algorithm: JWTAlgorithm,
                                kid: String?) throws(AuthError) -> Int? {
        switch algorithm {
        case .hs256:
            // The secret and nothing else: a public key of the set is never taken as an HMAC
            // secret, whatever the token's `kid` says (algorithm confusion).
            guard Digest.constantTimeEquals(Digest.hmacSHA256(key: secret, message: input), signature) else {
                throw AuthError(.badSignature, "signature does not match")
            }
            return nil
        case .es256, .rs256:
            guard let keys else {
                throw AuthError(.unsupportedAlgorithm, "\(algorithm.rawValue) tokens need a key set (JWT_JWKS_FILE or JWT_JWKS_URL)")
            }
            guard let kid, !kid.isEmpty else {
                throw AuthError(.malformed, "an \(algorithm.rawValue) token names its key (kid)")
            }
            let (key, generation) = try keys.key(kid, for: algorithm)
            guard key.verify(signature: signature, message: input) else {
                throw AuthError(.badSignature, "signature does not match")
            }
            return generation
        }
    }

    /// A user token's `iss` and `aud`. Service tokens are not held to them: neither
    /// `backbone token --service` nor Supabase's `service_role` key carries the issuer and
    /// audience of the users' sessions, and both are signed with the secret.
    private func checkIssuerAndAudience(_ object: [String: Any]) throws(AuthError) {
        if let issuer, object["iss"] as? String != issuer {
            throw AuthError(.wrongIssuer, "the token's issuer (iss) is not \(issuer)")
        }
        if let audience {
            let audiences: [String] = switch object["aud"] {
            case let one as String: [one]
            case let many as [Any]: many.compactMap { $0 as? String }
            default: []
            }
            guard audiences.contains(audience) else {
                throw AuthError(.wrongAudience, "the token's audience (aud) does not include \(audience)")
            }
        }
    }

    public func sign(_ claims: JWTClaims) -> String {
        let header = Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let payload = Base64URL.encode(Array((try? encoder.encode(claims)) ?? Data()))
        let input = header + "." + payload
        return input + "." + Base64URL.encode(Digest.hmacSHA256(key: secret, message: Array(input.utf8)))
    }

    /// The anon key of a project signed with this secret, made as a Supabase project's legacy
    /// anon key is (HS256, `role: anon`, no user): what an app is configured with beside the
    /// base URL (supabase-swift's `supabaseKey`), sent as `apikey`. The same for a secret every
    /// time, valid until 2100, so an app keeps it across restarts of `backbone dev`.
    public var anonKey: String {
        sign(JWTClaims(sub: "", exp: 4_102_444_800, iat: 1_700_000_000, role: "anon"))
    }

    /// A token for `userID` valid for `ttl` seconds from now.
    public func issue(userID: String, ttl: Int64 = 3600, role: String? = nil, now: Date = Date()) -> String {
        let iat = Int64(now.timeIntervalSince1970)
        return sign(JWTClaims(sub: userID, exp: iat + ttl, iat: iat, role: role))
    }

    private static func integer(_ value: Any?) -> Int64? {
        switch value {
        case let n as NSNumber: return n.int64Value
        case let i as Int: return Int64(i)
        case let d as Double: return Int64(exactly: d.rounded(.down))
        default: return nil
        }
    }
}
