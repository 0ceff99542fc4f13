import Auth
import BackboneTestSupport
import Foundation
import HTTPRouting
import Hashing
import ServiceLogging
import ServiceRuntime
import Testing

/// ES256 and RS256 tokens against a key set read from a file, as a service pointed at a
/// Supabase project's JWKS checks them; every token is minted by PyJWT (`TokenWitness`).
@Suite("ES256 and RS256 tokens against a JWKS (PyJWT witness)", .enabled(if: TokenWitness.isAvailable))
struct JWKSTests {
    let witness: TokenWitness
    let keys: JSONWebKeyring
    let codec: JWTCodec

    init() async throws {
        witness = try TokenWitness.shared()
        keys = JSONWebKeyring(source: .file(try witness.keySetFile()), logger: .disabled)
        try await keys.load()
        codec = JWTCodec(secret: TokenWitness.secret, keys: keys, issuer: TokenWitness.issuer, audience: TokenWitness.audience)
    }

    /// What a request with this token gets: its claims, or the 401 the service answers.
    func authenticate(_ token: String, with codec: JWTCodec? = nil) async -> Result<JWTClaims, HTTPError> {
        let request = HTTPRequest(method: .get, path: "/rooms/quota", headers: ["Authorization": "Bearer \(token)"])
        do { return .success(try await RequestAuthenticator(codec: codec ?? self.codec).claims(request)) } catch { return .failure(error) }
    }

    /// The code of the error `verify` throws, nil when it accepts.
    static func refusal(_ verify: () throws(AuthError) -> JWTClaims) -> AuthError.Code? {
        do {
            _ = try verify()
            return nil
        } catch {
            return error.code
        }
    }

    static func subject(of token: String) -> String? {
        let payload = token.split(separator: ".", omittingEmptySubsequences: false)[1]
        guard let bytes = Base64URL.decode(payload),
              let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else { return nil }
        return object["sub"] as? String
    }

    @Test("PyJWT's ES256 and RS256 Supabase sessions are accepted, aud a string or an array, and a legacy HS256 session too",
          arguments: ["es256", "rs256", "es256_audience_array", "hs256_session"])
    func accepted(_ name: String) async throws {
        let token = try witness.token(name)
        let claims = try await authenticate(token).get()
        #expect(claims.sub == Self.subject(of: token))
        #expect(UUID(uuidString: claims.sub) != nil && claims.role == "authenticated" && !claims.isService)
    }

    @Test("refused with 401 UNAUTHENTICATED and the reason", arguments: [
        ("unknown_kid", "unknown_key"),
        ("es384_p384", "unsupported_algorithm"),  // a P-384 key's own algorithm
        ("es256_p384_key", "key_mismatch"),  // ES256 naming the P-384 key
        ("es256_p384_signature", "bad_signature"),  // a P-384 signature under the P-256 key
        ("none", "unsupported_algorithm"),
        ("hs256_public_pem", "bad_signature"),  // algorithm confusion: the public key's PEM as HMAC secret
        ("hs256_public_jwk", "bad_signature"),  // … its JWK bytes
        ("hs256_rsa_pem", "bad_signature"),
        ("hs256_oct_key", "bad_signature"),  // a symmetric key published in the set is no secret
        ("rs256_with_ec_kid", "key_mismatch"),  // alg disagrees with the key's type
        ("es256_with_rsa_kid", "key_mismatch"),
        ("rs256_key_declares_rs384", "key_mismatch"),  // alg disagrees with the key's own alg
        ("rs256_short_key", "key_mismatch"),  // a 1024-bit RSA key
        ("wrong_audience", "wrong_audience"),
        ("no_audience", "wrong_audience"),
        ("wrong_issuer", "wrong_issuer"),
        ("expired", "expired"),
        ("es256_tampered", "bad_signature"),
        ("anon", "anon_key"),
    ])
    func refused(_ name: String, _ reason: String) async throws {
        let outcome = await authenticate(try witness.token(name))
        guard case .failure(let error) = outcome else {
            Issue.record("\(name) was accepted: \(outcome)")
            return
        }
        #expect(error.status == .unauthorized && error.code == "UNAUTHENTICATED")
        #expect(error.message.hasPrefix("token rejected (\(reason)): "), "\(name): \(error.message)")
    }

    @Test("the anon key's 401 says it is the app's key, not a user's; the service_role key is a service token")
    func supabaseProjectKeys() async throws {
        guard case .failure(let anon) = await authenticate(try witness.token("anon")) else {
            Issue.record("the anon key was accepted")
            return
        }
        #expect(anon.message.contains("anon key identifies the app, not a user"))
        // No sub, no aud, iss "supabase": a service token is not held to the users' issuer and audience.
        let service = try await authenticate(try witness.token("service_role")).get()
        #expect(service.isService && service.sub == "service_role")
        let request = HTTPRequest(method: .put, path: "/materials/m", headers: ["Authorization": "Bearer \(try witness.token("service_role"))"])
        #expect(try await RequestAuthenticator(codec: codec).requireService(request).isService)
    }

    @Test("the anon key is accepted only where anonymous clients are (the Realtime socket): no user, no service, and still refused everywhere else once verified; forged or expired, it is refused there too")
    func anonKeyWhereAnonymousClientsAre() throws {
        let anon = try witness.token("anon")
        let claims = try codec.verify(anon, acceptingAnonymous: true)
        #expect(claims.isAnonymous && !claims.isService && claims.sub.isEmpty)
        // Held in the verified-token cache now: the cache does not make it a user's token.
        #expect(Self.refusal { () throws(AuthError) in try codec.verify(anon) } == .anonymousKey)
        let forged = JWTCodec(secret: "another-project's-jwt-secret-0123456789")
            .sign(JWTClaims(sub: "", exp: Int64(Date().timeIntervalSince1970) + 600, role: "anon"))
        #expect(Self.refusal { () throws(AuthError) in try codec.verify(forged, acceptingAnonymous: true) } == .badSignature)
        let expired = JWTCodec(secret: TokenWitness.secret)
            .sign(JWTClaims(sub: "", exp: Int64(Date().timeIntervalSince1970) - 600, role: "anon"))
        #expect(Self.refusal { () throws(AuthError) in try codec.verify(expired, acceptingAnonymous: true) } == .expired)
        // A user's session stays a user's session for such a caller.
        let session = try witness.token("es256")
        #expect(try codec.verify(session, acceptingAnonymous: true).sub == Self.subject(of: session))
    }

    @Test("without a key set, ES256 and RS256 tokens are refused and HS256 ones still work")
    func withoutKeySet() async throws {
        let plain = JWTCodec(secret: TokenWitness.secret)
        let es256 = try witness.token("es256")
        #expect(Self.refusal { () throws(AuthError) in try plain.verify(es256) } == .unsupportedAlgorithm)
        #expect(try plain.verify(try witness.token("hs256_session")).role == "authenticated")
    }

    @Test("an erased user's ES256 token is refused like an HS256 one, but for the deletion receipt")
    func revokedSubjects() throws {
        let token = try witness.token("rs256")
        let sub = try #require(Self.subject(of: token))
        #expect(try codec.verify(token).sub == sub)  // verified once: held in the cache
        codec.revoked.insert(hashes: [RevokedSubjects.hash(sub)])
        #expect(Self.refusal { () throws(AuthError) in try codec.verify(token) } == .revokedSubject)
        #expect(try codec.verify(token, acceptingRevoked: true).sub == sub)
    }

    @Test("a token verified once is checked again when the key set changes: a key withdrawn no longer vouches for it")
    func cachedTokenRecheckedAfterNewSet() async throws {
        let path = try witness.keySetFile(["es-1", "rs-1"])
        let ring = JSONWebKeyring(source: .file(path), logger: .disabled)
        try await ring.load()
        let codec = JWTCodec(secret: TokenWitness.secret, keys: ring)
        let token = try witness.token("es256")
        #expect(try codec.verify(token).role == "authenticated")
        #expect(try codec.verify(token).role == "authenticated")
        let generation = ring.generation
        // The same set read again is no new set; a set without es-1 is.
        try await ring.load()
        #expect(ring.generation == generation)
        try Data(witness.keySet(["rs-1"])).write(to: URL(fileURLWithPath: path))
        try await ring.load()
        #expect(ring.generation == generation + 1)
        #expect(Self.refusal { () throws(AuthError) in try codec.verify(token) } == .unknownKey)
    }

    @Test("a key set keeps its usable keys and says why the others cannot be used")
    func keySetEntries() throws {
        let set = try JSONWebKeySet(json: witness.keySet(), source: "witness")
        #expect(set.usableKeyIDs == ["es-1", "rs-1"])
        #expect(set.keyIDs == ["ec-384", "es-1", "oct-1", "rs-1", "rs-1024", "rs-384"])
        let extra = Array(#"{"keys":[{"kty":"EC","crv":"P-256","x":"AAAA","y":"AAAA","kid":"short"},{"kty":"EC"},{"kid":"es-1","kty":"EC"}]}"#.utf8)
        let odd = try JSONWebKeySet(json: extra, source: "odd")
        #expect(odd.keyIDs == ["es-1", "short"] && odd.usableKeyIDs.isEmpty && odd.ignored.count == 1)
        #expect(throws: KeySetError.self) { try JSONWebKeySet(json: Array(#"{"kty":"EC"}"#.utf8), source: "not a set") }
        // A point that is not on P-256 is refused by OpenSSL, not taken as a key.
        let es1 = try #require(witness.keys["es-1"])
        var offCurve = try #require(try JSONSerialization.jsonObject(with: Data(es1)) as? [String: Any])
        offCurve["y"] = offCurve["x"]
        let document = try JSONSerialization.data(withJSONObject: ["keys": [offCurve]])
        #expect(try JSONWebKeySet(json: Array(document), source: "off curve").usableKeyIDs.isEmpty)
    }
}
