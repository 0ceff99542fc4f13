import Contracts
import Foundation
import Hashing

/// The tokens of Supabase Storage's signed URLs (`/object/sign/rooms/{path}?token=…`): a JWT
/// (HS256) whose payload names the object (`url`: `rooms/{path}`) and its expiry (`exp`), as
/// Supabase Storage's are. The key is derived from the JWT secret for this one purpose, so a
/// signed-URL token is never a valid bearer token (nor the reverse), and every replica that
/// shares the JWT secret checks the tokens any of them signed.
struct StorageURLSigner: Sendable {
    private let key: [UInt8]

    init(secret: [UInt8]) {
        key = Digest.hmacSHA256(key: secret, message: Array("zhixi-backbone storage signed URL v1".utf8))
    }

    private static let header = Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))

    /// A token for `object` (`rooms/{path}`) valid for `seconds` from `now`.
    func token(for object: String, seconds: Int, now: Date = Date()) -> String {
        let iat = Int(now.timeIntervalSince1970)
        var w = JSONWriter()
        w.beginObject()
        w.key("exp"); w.int(iat + seconds)
        w.key("iat"); w.int(iat)
        w.key("url"); w.string(object)
        w.endObject()
        let input = Self.header + "." + Base64URL.encode(w.bytes)
        return input + "." + Base64URL.encode(Digest.hmacSHA256(key: key, message: Array(input.utf8)))
    }

    /// Whether `token` was signed here for `object` and has not expired at `now`.
    func isValid(_ token: String, for object: String, now: Date = Date()) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == Self.header, let signature = Base64URL.decode(parts[2]) else { return false }
        let input = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard Digest.constantTimeEquals(Digest.hmacSHA256(key: key, message: input), signature),
              let payload = Base64URL.decode(parts[1]),
              let claims = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any],
              let url = claims["url"] as? String, let exp = (claims["exp"] as? NSNumber)?.doubleValue else {
            return false
        }
        return url == object && now.timeIntervalSince1970 < exp
    }
}
