import COpenSSL

/// A key that could not be built from the numbers given.
public struct PublicKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The numbers do not make a key (a point off the curve, coordinates of the wrong length).
        public static let invalidKey = Code(rawValue: "invalid_key")
    }

    public var code: Code
    public var message: String
    public var isRetriable: Bool { false }
    public var description: String { "public key \(code.rawValue): \(message)" }

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// A public key held by OpenSSL (an `EVP_PKEY`) that checks signatures over SHA-256: ECDSA
/// on P-256 (JWS `ES256`) or RSA PKCS #1 v1.5 (JWS `RS256`).
///
/// Built from the key's numbers as a JSON Web Key carries them (an EC point's `x` and `y`, an
/// RSA modulus and exponent) with OpenSSL 3's `EVP_PKEY_fromdata`, and checked with
/// `EVP_PKEY_public_check`, so a point that is not on the curve never becomes a key. Every
/// curve operation is OpenSSL's.
// @unchecked: the EVP_PKEY is never changed after init; OpenSSL allows one key to be used by
// many threads at once for verification (each check has its own EVP_MD_CTX), and guards the
// key's internal caches with the key's own lock.
public final class PublicKey: @unchecked Sendable {
    public enum Kind: Sendable, Equatable {
        case ellipticCurveP256
        case rsa(bits: Int)
    }

    public let kind: Kind
    private let key: OpaquePointer

    private init(kind: Kind, key: OpaquePointer) {
        self.kind = kind
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    /// The P-256 point (`x`, `y`), each coordinate 32 big-endian bytes.
    public static func ellipticCurveP256(x: [UInt8], y: [UInt8]) throws(PublicKeyError) -> PublicKey {
        guard x.count == 32, y.count == 32 else {
            throw PublicKeyError(.invalidKey, "P-256 coordinates are 32 bytes each (got \(x.count) and \(y.count))")
        }
        // SEC 1 uncompressed point: 0x04 ‖ x ‖ y.
        let point: [UInt8] = [0x04] + x + y
        // The builder keeps a pointer to the point's bytes until `OSSL_PARAM_BLD_to_param`,
        // which runs inside `fromData`: the whole construction stays within the buffer's lifetime.
        let made = point.withUnsafeBytes { bytes in
            fromData(type: "EC") { builder in
                OSSL_PARAM_BLD_push_utf8_string(builder, backbone_param_group_name(), backbone_curve_p256(), 0) == 1
                    && OSSL_PARAM_BLD_push_octet_string(builder, backbone_param_public_key(), bytes.baseAddress, bytes.count) == 1
            }
        }
        return PublicKey(kind: .ellipticCurveP256, key: try made.get())
    }

    /// The RSA key of `modulus` and `exponent` (big-endian bytes, as JWK `n` and `e`).
    public static func rsa(modulus: [UInt8], exponent: [UInt8]) throws(PublicKeyError) -> PublicKey {
        guard !modulus.isEmpty, !exponent.isEmpty, exponent.count <= 8 else {
            throw PublicKeyError(.invalidKey, "an RSA key needs a modulus and an exponent of at most 8 bytes")
        }
        let n = modulus.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
        let e = exponent.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
        // The builder copies the numbers in `OSSL_PARAM_BLD_to_param`; they are freed after.
        defer {
            BN_free(n)
            BN_free(e)
        }
        guard let n, let e else { throw PublicKeyError(.invalidKey, "OpenSSL could not hold the RSA numbers") }
        let key = try fromData(type: "RSA") { builder in
            OSSL_PARAM_BLD_push_BN(builder, backbone_param_rsa_n(), n) == 1
                && OSSL_PARAM_BLD_push_BN(builder, backbone_param_rsa_e(), e) == 1
        }.get()
        return PublicKey(kind: .rsa(bits: Int(EVP_PKEY_get_bits(key))), key: key)
    }

    /// A public `EVP_PKEY` of `type` from the parameters `push` adds, checked. `type` is static
    /// text: the context keeps the pointer it is given.
    private static func fromData(type: StaticString, _ push: (OpaquePointer) -> Bool) -> Result<OpaquePointer, PublicKeyError> {
        // OpenSSL's error queue is per thread: what a refused key leaves there must not be
        // blamed on the next call that happens to run on this thread.
        func refused(_ message: String) -> Result<OpaquePointer, PublicKeyError> {
            ERR_clear_error()
            return .failure(PublicKeyError(.invalidKey, message))
        }
        guard let builder = OSSL_PARAM_BLD_new() else { return refused("OpenSSL could not allocate parameters") }
        defer { OSSL_PARAM_BLD_free(builder) }
        guard push(builder), let parameters = OSSL_PARAM_BLD_to_param(builder) else {
            return refused("OpenSSL refused the key's numbers")
        }
        defer { OSSL_PARAM_free(parameters) }
        let typeName = UnsafeRawPointer(type.utf8Start).assumingMemoryBound(to: CChar.self)
        guard let context = EVP_PKEY_CTX_new_from_name(nil, typeName, nil) else { return refused("OpenSSL has no \(type) keys") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_fromdata_init(context) == 1 else { return refused("OpenSSL cannot build \(type) keys") }
        var made: OpaquePointer?
        guard EVP_PKEY_fromdata(context, &made, backbone_evp_pkey_public_key_selection(), parameters) == 1, let key = made else {
            return refused("the numbers do not make a \(type) public key")
        }
        guard let check = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else {
            EVP_PKEY_free(key)
            return refused("OpenSSL could not check the \(type) key")
        }
        defer { EVP_PKEY_CTX_free(check) }
        guard EVP_PKEY_public_check(check) == 1 else {
            EVP_PKEY_free(key)
            return refused("not a valid \(type) public key (for EC: the point is not on the curve)")
        }
        return .success(key)
    }

    /// Whether `signature` is the JWS `ES256` signature of `message`: `r ‖ s`, 32 bytes each
    /// (RFC 7518 §3.4), which OpenSSL takes as a DER `ECDSA-Sig-Value`.
    public func verifyES256(signature: [UInt8], message: [UInt8]) -> Bool {
        guard kind == .ellipticCurveP256, signature.count == 64,
              let der = Self.derECDSASignature(r: signature[..<32], s: signature[32...]) else { return false }
        return digestVerify(signature: der, message: message)
    }

    /// Whether `signature` is the JWS `RS256` signature (RSASSA-PKCS1-v1_5 with SHA-256) of `message`.
    public func verifyRS256(signature: [UInt8], message: [UInt8]) -> Bool {
        guard case .rsa = kind else { return false }
        // EVP_DigestVerify's default padding for an RSA key is PKCS #1 v1.5.
        return digestVerify(signature: signature, message: message)
    }

    private func digestVerify(signature: [UInt8], message: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            ERR_clear_error()
            return false
        }
        let result = signature.withUnsafeBufferPointer { sig in
            message.withUnsafeBufferPointer { msg in
                EVP_DigestVerify(context, sig.baseAddress, sig.count, msg.baseAddress, msg.count)
            }
        }
        if result != 1 { ERR_clear_error() }
        return result == 1
    }

    /// `r` and `s` (unsigned big-endian) as DER, through `ECDSA_SIG_set0` and `i2d_ECDSA_SIG`.
    static func derECDSASignature(r: ArraySlice<UInt8>, s: ArraySlice<UInt8>) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let rNumber = r.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
        let sNumber = s.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
        // ECDSA_SIG_set0 takes both numbers on success only.
        guard let rNumber, let sNumber, ECDSA_SIG_set0(signature, rNumber, sNumber) == 1 else {
            BN_free(rNumber)
            BN_free(sNumber)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return written == length ? der : nil
    }
}
