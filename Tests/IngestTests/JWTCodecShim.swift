import Auth
import Hashing

/// Signs arbitrary input with a secret (to build forged tokens in tests).
enum JWTCodecShim {
    static func signature(input: String, secret: String) -> String {
        Base64URL.encode(Digest.hmacSHA256(key: Array(secret.utf8), message: Array(input.utf8)))
    }
}
