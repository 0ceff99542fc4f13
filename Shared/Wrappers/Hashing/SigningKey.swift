import COpenSSL
import Foundation

/// A P-256 private key that signs JSON Web Tokens (JWS `ES256`; `backbone dev`'s auth server),
/// held by OpenSSL: made by `EVP_PKEY_generate`, kept as PKCS #8 PEM in a file (`persistent`) so
/// that tokens and the key set that publishes it stay valid across restarts, signing with
/// `EVP_DigestSign`.
// @unchecked: the EVP_PKEY is never changed after init; OpenSSL allows one key to sign on many
// threads at once (each signature has its own EVP_MD_CTX).
public final class SigningKey: @unchecked Sendable {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    private let key: OpaquePointer
    /// The public point's coordinates, 32 big-endian bytes each.
    public let x: [UInt8]
    public let y: [UInt8]

    private init(key: OpaquePointer) throws(Failure) {
        self.key = key
        var point = [UInt8](repeating: 0, count: 65)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(key, backbone_param_public_key(), &point, point.count, &length) == 1,
              length == 65, point[0] == 0x04 else {
            ERR_clear_error()
            EVP_PKEY_free(key)
            throw Failure(description: "the key is not a P-256 key")
        }
        x = Array(point[1...32])
        y = Array(point[33...64])
    }

    deinit { EVP_PKEY_free(key) }

    /// The key's id in the key set: the first 16 hex digits of the SHA-256 of its point.
    public var kid: String { String(Digest.hex(Digest.sha256([0x04] + x + y)).prefix(16)) }

    /// A new random P-256 key.
    public static func generate() throws(Failure) -> SigningKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw Failure(description: "OpenSSL has no EC keys") }
        defer { EVP_PKEY_CTX_free(context) }
        var made: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
              EVP_PKEY_generate(context, &made) == 1, let made else {
            ERR_clear_error()
            throw Failure(description: "OpenSSL could not make a P-256 key")
        }
        return try SigningKey(key: made)
    }

    /// The key of a PEM private key (PKCS #8, as `pem` writes it).
    public static func read(pem: String) throws(Failure) -> SigningKey {
        let bytes = Array(pem.utf8)
        let loaded: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let loaded else {
            ERR_clear_error()
            throw Failure(description: "not a PEM private key")
        }
        return try SigningKey(key: loaded)
    }

    /// The key as PKCS #8 PEM, unencrypted (the dev folder is the developer's own).
    public var pem: String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else {
            ERR_clear_error()
            return ""
        }
        var chunk = [UInt8](repeating: 0, count: 4096)
        var out: [UInt8] = []
        while true {
            let read = BIO_read(bio, &chunk, Int32(chunk.count))
            if read <= 0 { break }
            out += chunk[0..<Int(read)]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The key kept at `path`, or a new one written there (mode 0600) when there is none.
    public static func persistent(at path: String) throws -> SigningKey {
        if let text = try? String(contentsOfFile: path, encoding: .utf8) {
            return try read(pem: text)
        }
        let key = try generate()
        let created = FileManager.default.createFile(atPath: path, contents: Data(key.pem.utf8), attributes: [.posixPermissions: 0o600])
        guard created else { throw Failure(description: "cannot write the signing key to \(path)") }
        return key
    }

    /// The public key as a JSON Web Key (`kty EC`, `crv P-256`, `alg ES256`).
    public var publicJWK: [String: Any] {
        ["kty": "EC", "crv": "P-256", "x": Base64URL.encode(x), "y": Base64URL.encode(y), "kid": kid, "alg": "ES256", "use": "sig",
         "key_ops": ["verify"]]
    }

    /// The key set that publishes this key.
    public var jwksJSON: [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: ["keys": [publicJWK]], options: [.sortedKeys])) ?? Data())
    }

    /// A compact JWS (`ES256`, this key's `kid`) of `payload` (a JSON object's bytes).
    public func sign(payload: [UInt8]) -> String? {
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"\#(kid)","typ":"JWT"}"#.utf8))
        let input = header + "." + Base64URL.encode(payload)
        guard let signature = signES256(Array(input.utf8)) else { return nil }
        return input + "." + Base64URL.encode(signature)
    }

    /// The JWS signature `r ‖ s` (32 bytes each) of `message`, from OpenSSL's DER signature.
    func signES256(_ message: [UInt8]) -> [UInt8]? {
        guard let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            ERR_clear_error()
            return nil
        }
        var length = 0
        guard message.withUnsafeBufferPointer({ EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count) }) == 1 else {
            ERR_clear_error()
            return nil
        }
        var der = [UInt8](repeating: 0, count: length)
        guard message.withUnsafeBufferPointer({ EVP_DigestSign(context, &der, &length, $0.baseAddress, $0.count) }) == 1 else {
            ERR_clear_error()
            return nil
        }
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, length)
        }
        guard let parsed else { return nil }
        defer { ECDSA_SIG_free(parsed) }
        var r = [UInt8](repeating: 0, count: 32)
        var s = [UInt8](repeating: 0, count: 32)
        guard BN_bn2binpad(ECDSA_SIG_get0_r(parsed), &r, 32) == 32, BN_bn2binpad(ECDSA_SIG_get0_s(parsed), &s, 32) == 32 else { return nil }
        return r + s
    }
}
