import Foundation
import Hashing

/// The claims this system reads from a token. `sub` is the user id; `role: "service"`
/// marks a service token (catalog maintenance).
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

    public var isService: Bool { role == "service" }
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

/// Verifies and signs HS256 JSON Web Tokens with a shared secret.
///
/// Only `HS256` is accepted (`alg: none` and every other algorithm are refused before the
/// signature is looked at); the signature is compared in constant time; `exp` and `nbf`
/// are honoured with a small leeway for clock skew, on every call. The claims of a token
/// whose signature was verified are kept (up to `cacheCapacity` tokens), so a client sending
/// the same token again costs a dictionary lookup instead of an HMAC and a JSON parse.
public struct JWTCodec: Sendable {
    public let secret: [UInt8]
    public let leeway: Int64
    /// Subjects whose user tokens are refused (erased accounts); service tokens are not affected.
    public let revoked: RevokedSubjects
    private let verified: VerifiedTokenCache

    public init(secret: String, leewaySeconds: Int64 = 30, cacheCapacity: Int = 10_000) {
        self.secret = Array(secret.utf8)
        self.leeway = leewaySeconds
        self.verified = VerifiedTokenCache(capacity: cacheCapacity)
        self.revoked = RevokedSubjects()
    }

    private struct Header: Codable { var alg: String; var typ: String? }

    /// `acceptingRevoked`: also the token of an erased account (the one route that answers
    /// such a user: their deletion receipt).
    public func verify(_ token: String, now: Date = Date(), acceptingRevoked: Bool = false) throws(AuthError) -> JWTClaims {
        let claims: JWTClaims
        if let known = verified.claims(for: token) {
            claims = known
        } else {
            claims = try verifiedClaims(token)
            verified.store(claims, for: token)
        }
        let nowSeconds = Int64(now.timeIntervalSince1970)
        // Written so that no claim value (Int64.max, Int64.min) can overflow.
        if let exp = claims.exp, nowSeconds - leeway >= exp {
            throw AuthError(.expired, "token expired")
        }
        if let nbf = claims.nbf, nowSeconds + leeway < nbf {
            throw AuthError(.notYetValid, "token not valid yet")
        }
        if !acceptingRevoked, !claims.isService, revoked.contains(claims.sub) {
            throw AuthError(.revokedSubject, "the account was deleted")
        }
        return claims
    }

    /// The claims of a token with a valid HS256 signature and a usable subject (times not checked).
    private func verifiedClaims(_ token: String) throws(AuthError) -> JWTClaims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw AuthError(.malformed, "a token has three dot-separated parts")
        }
        guard let headerBytes = Base64URL.decode(parts[0]),
              let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)) else {
            throw AuthError(.malformed, "header is not base64url JSON")
        }
        guard header.alg == "HS256" else {
            throw AuthError(.unsupportedAlgorithm, "only HS256 is accepted")
        }
        guard let signature = Base64URL.decode(parts[2]) else {
            throw AuthError(.malformed, "signature is not base64url")
        }
        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        let expected = Digest.hmacSHA256(key: secret, message: signingInput)
        guard Digest.constantTimeEquals(expected, signature) else {
            throw AuthError(.badSignature, "signature does not match")
        }
        guard let payloadBytes = Base64URL.decode(parts[1]),
              let object = try? JSONSerialization.jsonObject(with: Data(payloadBytes)) as? [String: Any] else {
            throw AuthError(.malformed, "payload is not a JSON object")
        }
        guard let sub = object["sub"] as? String, !sub.isEmpty else {
            throw AuthError(.missingSubject, "token has no subject")
        }
        guard Identifier.isAcceptable(sub) else {
            throw AuthError(.invalidSubject, "subject must be at most \(Identifier.maxUTF8Length) bytes without whitespace or control characters")
        }
        return JWTClaims(sub: sub, exp: Self.integer(object["exp"]), nbf: Self.integer(object["nbf"]),
                         iat: Self.integer(object["iat"]), role: object["role"] as? String)
    }

    public func sign(_ claims: JWTClaims) -> String {
        let header = Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let payload = Base64URL.encode(Array((try? encoder.encode(claims)) ?? Data()))
        let input = header + "." + payload
        return input + "." + Base64URL.encode(Digest.hmacSHA256(key: secret, message: Array(input.utf8)))
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
