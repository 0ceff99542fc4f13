import CArgon2
import Foundation
import Hashing

/// Passwords as Argon2id hashes (libargon2, the reference implementation), in the PHC string
/// form (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`) that carries its own parameters, so that
/// stronger parameters later still check the hashes made now. The parameters are OWASP's
/// minimum for Argon2id: 19 MiB, two passes, one lane.
public enum PasswordHash {
    static let memoryKiB: UInt32 = 19_456
    static let passes: UInt32 = 2
    static let lanes: UInt32 = 1
    static let saltBytes = 16
    static let hashBytes = 32

    /// The PHC string of `password` with a new random salt; nil only if libargon2 fails.
    public static func make(_ password: String) -> String? {
        let bytes = Array(password.utf8)
        let salt = Digest.randomBytes(saltBytes)
        let length = argon2_encodedlen(passes, memoryKiB, lanes, UInt32(saltBytes), UInt32(hashBytes), Argon2_id)
        var encoded = [CChar](repeating: 0, count: length)
        let status = bytes.withUnsafeBytes { pwd in
            salt.withUnsafeBytes { saltBuffer in
                argon2id_hash_encoded(passes, memoryKiB, lanes, pwd.baseAddress, pwd.count, saltBuffer.baseAddress, saltBuffer.count,
                                      hashBytes, &encoded, length)
            }
        }
        guard status == ARGON2_OK.rawValue else { return nil }
        return String(decoding: encoded.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `password` is the one `encoded` was made from (libargon2 compares in constant time).
    public static func verify(_ password: String, against encoded: String) -> Bool {
        let bytes = Array(password.utf8)
        return bytes.withUnsafeBytes { pwd in argon2id_verify(encoded, pwd.baseAddress, pwd.count) } == ARGON2_OK.rawValue
    }

    /// A hash of nothing anyone knows: checked against when the account does not exist, so that
    /// an unknown e-mail address costs as long as a wrong password.
    static let decoy: String = make(Digest.hex(Digest.randomBytes(16))) ?? ""
}
