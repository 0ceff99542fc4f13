import Foundation
import Hashing

/// The tokens of Supabase Storage's signed URLs: a JWT (HS256) whose payload names the object
/// (`url`: `rooms/{path}`) and its expiry (`exp`), as Supabase Storage's are.
///
/// - `.download` (`/object/sign/rooms/{path}?token=…`, the transcode worker's outputs);
/// - `.upload` (`/object/upload/sign/rooms/{path}?token=…`, what ingest's upload-init hands
///   out): the payload also holds the size the object must have (`size`), or the most it may
///   have (`max_size`, a `roomplan.json` whose size upload-init was not told).
///
/// The key is derived from the JWT secret for each purpose, so a signed-URL token is never a
/// valid bearer token (nor the reverse), a download token never admits an upload, and every
/// replica that shares the JWT secret checks the tokens any of them signed.
public struct StorageURLSigner: Sendable {
    public enum Purpose: String, Sendable {
        case download = "zhixi-backbone storage signed URL v1"
        case upload = "zhixi-backbone storage signed upload URL v1"
    }

    /// What a valid token admits.
    public struct Grant: Sendable, Equatable {
        public var object: String
        /// Exactly this many bytes.
        public var size: Int64?
        /// At most this many bytes (when `size` is not known).
        public var maxSize: Int64?
        public var expiresAt: Date

        /// Whether a body of `bytes` is what the token admits.
        public func admits(bytes: Int64) -> Bool {
            if let size { return bytes == size }
            if let maxSize { return (1...maxSize).contains(bytes) }
            return true
        }
    }

    private let key: [UInt8]

    public init(secret: [UInt8], purpose: Purpose = .download) {
        key = Digest.hmacSHA256(key: secret, message: Array(purpose.rawValue.utf8))
    }

    private static let header = Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))

    /// A token for `object` (`rooms/{path}`) valid for `seconds` from `now`; for an upload, the
    /// exact `size` or the `maxSize` of the body it admits.
    public func token(for object: String, seconds: Int, size: Int64? = nil, maxSize: Int64? = nil, now: Date = Date()) -> String {
        let iat = Int(now.timeIntervalSince1970)
        var claims: [String: Any] = ["exp": iat + seconds, "iat": iat, "url": object]
        if let size { claims["size"] = size }
        if let maxSize { claims["max_size"] = maxSize }
        let payload = (try? JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        let input = Self.header + "." + Base64URL.encode(Array(payload))
        return input + "." + Base64URL.encode(Digest.hmacSHA256(key: key, message: Array(input.utf8)))
    }

    /// What `token` admits if it was signed here for `object` and has not expired at `now`.
    public func grant(_ token: String, for object: String, now: Date = Date()) -> Grant? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == Self.header, let signature = Base64URL.decode(parts[2]) else { return nil }
        let input = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard Digest.constantTimeEquals(Digest.hmacSHA256(key: key, message: input), signature),
              let payload = Base64URL.decode(parts[1]),
              let claims = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any],
              let url = claims["url"] as? String, let exp = (claims["exp"] as? NSNumber)?.doubleValue,
              url == object, now.timeIntervalSince1970 < exp else {
            return nil
        }
        return Grant(object: url, size: (claims["size"] as? NSNumber)?.int64Value,
                     maxSize: (claims["max_size"] as? NSNumber)?.int64Value, expiresAt: Date(timeIntervalSince1970: exp))
    }

    /// Whether `token` was signed here for `object` and has not expired at `now`.
    public func isValid(_ token: String, for object: String, now: Date = Date()) -> Bool {
        grant(token, for: object, now: now) != nil
    }
}
