import COpenSSL

/// SHA-256 and HMAC-SHA256 from OpenSSL's libcrypto, plus the helpers tokens need.
public enum Digest {
    /// SHA-256 of `bytes` (32 bytes).
    public static func sha256<Bytes: Sequence>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        let input = Array(bytes)
        var output = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        input.withUnsafeBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                var length: UInt32 = 0
                _ = EVP_Digest(inBuf.baseAddress, inBuf.count, outBuf.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        return output
    }

    /// HMAC-SHA256 of `message` under `key` (32 bytes).
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        key.withUnsafeBufferPointer { keyBuf in
            message.withUnsafeBufferPointer { msgBuf in
                output.withUnsafeMutableBufferPointer { outBuf in
                    _ = HMAC(EVP_sha256(), keyBuf.baseAddress, Int32(keyBuf.count),
                             msgBuf.baseAddress, msgBuf.count, outBuf.baseAddress, &length)
                }
            }
        }
        return Array(output.prefix(Int(length)))
    }

    /// Compares in time independent of where the inputs differ (OpenSSL's CRYPTO_memcmp).
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in CRYPTO_memcmp(pa.baseAddress, pb.baseAddress, a.count) == 0 } }
    }

    /// Cryptographically secure random bytes.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBufferPointer { _ = RAND_bytes($0.baseAddress, Int32(count)) }
        return bytes
    }

    /// Lower-case hexadecimal.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 0xF)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
