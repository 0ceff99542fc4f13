import Foundation
import Hashing

/// The signature algorithms a token may name in its header's `alg`. Every other value
/// (`none`, `HS512`, `ES384`, `PS256`, `EdDSA`…) is refused before a key is looked at.
public enum JWTAlgorithm: String, Sendable {
    /// HMAC-SHA256 with `JWT_SECRET` (this system's own tokens, Supabase's legacy secret).
    case hs256 = "HS256"
    /// ECDSA P-256 with SHA-256, against a key of the key set (Supabase Auth's signing keys).
    case es256 = "ES256"
    /// RSASSA-PKCS1-v1_5 with SHA-256, against a key of the key set.
    case rs256 = "RS256"
}

/// A key set that could not be read, or is not a JSON Web Key Set.
public struct KeySetError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// `JWT_JWKS_FILE` cannot be read.
        public static let unreadable = Code(rawValue: "unreadable")
        /// `JWT_JWKS_URL` did not answer, or answered 429 or 5xx: may answer later.
        public static let unavailable = Code(rawValue: "unavailable")
        /// The document is not a key set, or the URL answered another error status.
        public static let invalid = Code(rawValue: "invalid")
    }

    public var code: Code
    public var message: String
    /// Where the set was read from: a path or URL, logged (a JWKS URL needs no credentials).
    public var source: String
    public var isRetriable: Bool { code == .unavailable }
    public var description: String { "key set \(source) \(code.rawValue): \(message)" }

    init(_ code: Code, _ message: String, source: String) {
        self.code = code
        self.message = message
        self.source = source
    }
}

/// The public keys of a JSON Web Key Set (RFC 7517) as an identity provider publishes them
/// (Supabase Auth: `https://{project}.supabase.co/auth/v1/.well-known/jwks.json`), by `kid`.
///
/// Each key checks one algorithm only, fixed here from the key itself and never from a token:
/// an EC key on P-256 checks `ES256`, an RSA key of 2,048 bits or more checks `RS256`, and a
/// key's own `alg`, when it has one, must say the same. Any other key (another curve, a short
/// RSA modulus, a symmetric `oct` key, a key for encryption) is kept with the reason it cannot
/// be used, so that a token naming it is refused with that reason; one such key does not spoil
/// the rest of the set. `HS256` is never checked with a key of the set: its only secret is
/// `JWT_SECRET`, so a public key can never be used as an HMAC secret.
public struct JSONWebKeySet: Sendable {
    /// A key that checks signatures of `algorithm`.
    struct Key: Sendable {
        var algorithm: JWTAlgorithm
        var publicKey: PublicKey

        func verify(signature: [UInt8], message: [UInt8]) -> Bool {
            switch algorithm {
            case .es256: publicKey.verifyES256(signature: signature, message: message)
            case .rs256: publicKey.verifyRS256(signature: signature, message: message)
            case .hs256: false
            }
        }
    }

    enum Entry: Sendable {
        case usable(Key)
        /// Why tokens naming this key are refused.
        case unusable(String)
    }

    /// The shortest RSA modulus accepted, in bits (RFC 7518 §3.3).
    public static let minimumRSABits = 2048

    let entries: [String: Entry]
    /// The SHA-256 of the document: the same set read again is not a new set.
    let fingerprint: [UInt8]
    /// Keys left out of `entries` (no `kid`, a `kid` seen before), for the log.
    public let ignored: [String]

    public static let empty = JSONWebKeySet(entries: [:], fingerprint: [], ignored: [])

    init(entries: [String: Entry], fingerprint: [UInt8], ignored: [String]) {
        self.entries = entries
        self.fingerprint = fingerprint
        self.ignored = ignored
    }

    /// Parses a key set document; `source` names it in errors.
    public init(json bytes: [UInt8], source: String) throws(KeySetError) {
        guard let document = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
              let keys = document["keys"] as? [Any] else {
            throw KeySetError(.invalid, "not a JSON object with a \"keys\" array", source: source)
        }
        var entries: [String: Entry] = [:]
        var ignored: [String] = []
        for (index, element) in keys.enumerated() {
            guard let jwk = element as? [String: Any], let kid = jwk["kid"] as? String, !kid.isEmpty else {
                ignored.append("key \(index) has no kid: no token can name it")
                continue
            }
            guard entries[kid] == nil else {
                ignored.append("key \(index) repeats kid \(kid): the first one is used")
                continue
            }
            entries[kid] = Self.entry(jwk)
        }
        self.init(entries: entries, fingerprint: Digest.sha256(bytes), ignored: ignored)
    }

    /// The key ids in the set, usable or not.
    public var keyIDs: [String] { entries.keys.sorted() }

    /// The ids of the keys that can check tokens.
    public var usableKeyIDs: [String] {
        entries.filter { if case .usable = $0.value { true } else { false } }.keys.sorted()
    }

    /// The key `kid` names, if it checks `algorithm`.
    func key(_ kid: String, for algorithm: JWTAlgorithm) -> Result<Key, AuthError>? {
        switch entries[kid] {
        case nil:
            return nil
        case .unusable(let reason):
            return .failure(AuthError(.keyMismatch, "key \(kid) cannot check tokens: \(reason)"))
        case .usable(let key) where key.algorithm != algorithm:
            return .failure(AuthError(.keyMismatch, "key \(kid) checks \(key.algorithm.rawValue) tokens, not \(algorithm.rawValue)"))
        case .usable(let key):
            return .success(key)
        }
    }

    private static func entry(_ jwk: [String: Any]) -> Entry {
        if let use = jwk["use"] as? String, use != "sig" {
            return .unusable("its use is \(use), not sig")
        }
        if let operations = jwk["key_ops"] as? [String], !operations.contains("verify") {
            return .unusable("its key_ops do not include verify")
        }
        let declared = jwk["alg"] as? String
        func decoded(_ name: String) -> [UInt8]? { (jwk[name] as? String).flatMap { Base64URL.decode($0[...]) } }
        switch jwk["kty"] as? String {
        case "EC":
            let curve = jwk["crv"] as? String ?? "unnamed"
            guard curve == "P-256" else { return .unusable("an EC key on \(curve): ES256 needs P-256") }
            guard declared == nil || declared == JWTAlgorithm.es256.rawValue else {
                return .unusable("an EC P-256 key for \(declared ?? ""): only ES256 is accepted")
            }
            guard let x = decoded("x"), let y = decoded("y") else { return .unusable("an EC key without base64url x and y") }
            do {
                return .usable(Key(algorithm: .es256, publicKey: try .ellipticCurveP256(x: x, y: y)))
            } catch {
                return .unusable(error.message)
            }
        case "RSA":
            guard declared == nil || declared == JWTAlgorithm.rs256.rawValue else {
                return .unusable("an RSA key for \(declared ?? ""): only RS256 is accepted")
            }
            guard let n = decoded("n"), let e = decoded("e") else { return .unusable("an RSA key without base64url n and e") }
            let key: PublicKey
            do { key = try .rsa(modulus: n, exponent: e) } catch { return .unusable(error.message) }
            guard case .rsa(let bits) = key.kind, bits >= minimumRSABits else {
                return .unusable("an RSA key shorter than \(minimumRSABits) bits")
            }
            return .usable(Key(algorithm: .rs256, publicKey: key))
        case "oct":
            return .unusable("a symmetric (oct) key: HS256 tokens are checked with JWT_SECRET only")
        case let type?:
            return .unusable("key type \(type) is not accepted (EC P-256 and RSA are)")
        case nil:
            return .unusable("a key without kty")
        }
    }
}
