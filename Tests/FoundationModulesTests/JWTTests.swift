import Auth
import Contracts
import Foundation
import Hashing
import Testing

@Suite("HS256 tokens")
struct JWTTests {
    let codec = JWTCodec(secret: "test-secret-0123456789", leewaySeconds: 0)
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func token(header: String, payload: String, secret: String = "test-secret-0123456789") -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        let signature = Digest.hmacSHA256(key: Array(secret.utf8), message: Array(input.utf8))
        return input + "." + Base64URL.encode(signature)
    }

    func rejection(_ token: String) -> AuthError.Code? {
        do {
            _ = try codec.verify(token, now: now)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("a valid token yields its subject and role")
    func valid() throws {
        let t = token(header: #"{"alg":"HS256","typ":"JWT"}"#, payload: #"{"sub":"user-1","exp":1800000060,"role":"service"}"#)
        let claims = try codec.verify(t, now: now)
        #expect(claims.sub == "user-1" && claims.isService)
    }

    @Test("issued tokens verify, and other secrets don't accept them")
    func issueRoundTrip() throws {
        let t = codec.issue(userID: "u-42", ttl: 60, now: now)
        #expect(try codec.verify(t, now: now).sub == "u-42")
        #expect(throws: AuthError.self) { try JWTCodec(secret: "another-secret-9876543210").verify(t, now: now) }
    }

    @Test("a token verified once is still refused once it expires, and before its nbf")
    func verifiedTokenStillExpires() throws {
        let t = token(header: #"{"alg":"HS256"}"#, payload: #"{"sub":"u","nbf":1799999990,"exp":1800000060}"#)
        #expect(try codec.verify(t, now: now).sub == "u")
        #expect(try codec.verify(t, now: now).sub == "u")
        func code(at time: Date, _ token: String = t) -> AuthError.Code? {
            do { _ = try codec.verify(token, now: time); return nil } catch { return error.code }
        }
        #expect(code(at: now.addingTimeInterval(60)) == .expired)
        #expect(code(at: now.addingTimeInterval(-11)) == .notYetValid)
        #expect(code(at: now) == nil)
        // A token altered after a good one was verified is checked on its own.
        let parts = t.split(separator: ".")
        let forged = parts[0] + "." + Base64URL.encode(Array(#"{"sub":"v","exp":1800000060}"#.utf8)) + "." + parts[2]
        #expect(code(at: now, forged) == .badSignature)
    }

    @Test("an expired token is refused")
    func expired() {
        #expect(rejection(token(header: #"{"alg":"HS256"}"#, payload: #"{"sub":"u","exp":1799999999}"#)) == .expired)
    }

    @Test("a token used before nbf is refused")
    func notYetValid() {
        #expect(rejection(token(header: #"{"alg":"HS256"}"#, payload: #"{"sub":"u","nbf":1800000100}"#)) == .notYetValid)
    }

    @Test("a wrong signature is refused")
    func wrongSignature() {
        #expect(rejection(token(header: #"{"alg":"HS256"}"#, payload: #"{"sub":"u"}"#, secret: "not-the-secret-xxxxxxx")) == .badSignature)
    }

    @Test("alg none is refused even with an empty signature")
    func algNone() {
        let unsigned = Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + Base64URL.encode(Array(#"{"sub":"admin"}"#.utf8)) + "."
        #expect(rejection(unsigned) == .unsupportedAlgorithm)
        #expect(rejection(token(header: #"{"alg":"HS512"}"#, payload: #"{"sub":"u"}"#)) == .unsupportedAlgorithm)
    }

    @Test("malformed tokens are refused", arguments: ["", "abc", "a.b", "a.b.c.d", "!!!.???.***", "e30.e30.", "eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.AAAA"])
    func malformed(_ token: String) {
        #expect(rejection(token) == .malformed || rejection(token) == .badSignature)
    }

    @Test("a token without a subject is refused")
    func missingSubject() {
        #expect(rejection(token(header: #"{"alg":"HS256"}"#, payload: #"{"exp":1800000060}"#)) == .missingSubject)
    }
}

@Suite("Digests")
struct DigestTests {
    @Test("SHA-256 and HMAC-SHA256 match published test vectors")
    func vectors() {
        #expect(Digest.hex(Digest.sha256(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // RFC 4231 test case 2
        #expect(Digest.hex(Digest.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(Digest.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!Digest.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!Digest.constantTimeEquals([1, 2], [1, 2, 3]))
    }
}

extension JWTTests {
    @Test("a signed token whose sub is too long or holds whitespace or control characters is refused")
    func absurdSubjects() throws {
        let header = #"{"alg":"HS256","typ":"JWT"}"#
        let longest = String(repeating: "u", count: Identifier.maxUTF8Length)
        #expect(try codec.verify(token(header: header, payload: #"{"sub":"\#(longest)"}"#), now: now).sub == longest)
        for sub in [longest + "u", String(repeating: "x", count: 300), "user 1", "user\\n1", "user\\u00001", "\\t", "a\\u200Bb"] {
            #expect(rejection(token(header: header, payload: #"{"sub":"\#(sub)"}"#)) == .invalidSubject, "sub \(sub)")
        }
        let wide = String(repeating: "é", count: Identifier.maxUTF8Length / 2 + 1)  // 2 bytes each: over the byte limit
        #expect(rejection(token(header: header, payload: #"{"sub":"\#(wide)"}"#)) == .invalidSubject)
    }

    @Test("extreme exp and nbf claims are refused or accepted without overflowing")
    func extremeTimes() {
        let header = #"{"alg":"HS256","typ":"JWT"}"#
        #expect(rejection(token(header: header, payload: #"{"sub":"u","exp":9223372036854775807}"#)) == nil)
        #expect(rejection(token(header: header, payload: #"{"sub":"u","exp":-9223372036854775808}"#)) == .expired)
        #expect(rejection(token(header: header, payload: #"{"sub":"u","nbf":9223372036854775807}"#)) == .notYetValid)
        #expect(rejection(token(header: header, payload: #"{"sub":"u","exp":1e300}"#)) != .malformed)
    }
}
