import Auth
import BackboneTestSupport
import DevAuth
import Foundation
import Hashing
import Postgres
import ServiceLogging
import Testing

/// Signing in at `backbone dev`'s one origin (`APP_BASE_URL/auth/v1`) with Supabase's own Python
/// client, as the apps do, and what the embedded auth server keeps.
@Suite("Sign-in at backbone dev's one origin", .serialized)
struct DevAuthTests {
    static let clients = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Clients")
    static let appleClientID = "com.example.crowdroom"

    @Test("the signing key is kept in the dev folder: the same key (and kid) at the next start, and its ES256 signatures verify with the key it publishes")
    func signingKeyPersists() throws {
        let home = CLIProcess.emptyHome()
        let first = try DevAuth.prepareKey(home: home)
        let again = try DevAuth.prepareKey(home: home)
        #expect(first.kid == again.kid && first.x == again.x && first.y == again.y)
        let token = try #require(first.sign(payload: Array(#"{"sub":"00000000-0000-0000-0000-000000000001","exp":4102444800}"#.utf8)))
        let set = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: DevAuth.keySetPath(home: home)))) as? [String: Any]
        let jwk = try #require((set?["keys"] as? [[String: Any]])?.first)
        #expect(jwk["kid"] as? String == first.kid && jwk["alg"] as? String == "ES256" && jwk["crv"] as? String == "P-256")
        let key = try PublicKey.ellipticCurveP256(x: try #require(Base64URL.decode(Substring(jwk["x"] as? String ?? ""))),
                                                  y: try #require(Base64URL.decode(Substring(jwk["y"] as? String ?? ""))))
        let parts = token.split(separator: ".")
        #expect(key.verifyES256(signature: try #require(Base64URL.decode(parts[2])),
                                message: Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))))
        let mode = try FileManager.default.attributesOfItem(atPath: DevAuth.keyPath(home: home))[.posixPermissions] as? Int
        #expect(mode == 0o600, "the private key is the developer's alone")
    }

    @Test("passwords are kept as Argon2id hashes that verify the password and nothing else, each with its own salt")
    func passwordHashes() throws {
        let hash = try #require(PasswordHash.make("correct horse"))
        #expect(hash.hasPrefix("$argon2id$"))
        #expect(PasswordHash.verify("correct horse", against: hash))
        #expect(!PasswordHash.verify("correct horsf", against: hash))
        #expect(try #require(PasswordHash.make("correct horse")) != hash)
    }

    @Test("supabase-py against backbone dev: sign_up, sign_in_with_password, get_user, update_user, refresh_session, sign_out and sign_in_with_id_token(apple) behave as against Supabase, the session works on functions, PostgREST, the reading app's routes and the Realtime join, each error is Supabase Auth's, and a deleted account's refresh token stops once its erasure runs",
          .enabled(if: Integration.isEnabled), .timeLimit(.minutes(5)))
    func supabaseClientThroughOneOrigin() async throws {
        let offset = Integration.freePortOffset(for: DevStack.ports)
        let keys = CLIProcess.emptyHome() + "/apple-keys.json"
        try #"{"keys":[]}"#.write(toFile: keys, atomically: true, encoding: .utf8)
        let dev = try await DevStack.start(["--port-offset", String(offset)],
                                           environment: ["AUTH_APPLE_CLIENT_IDS": Self.appleClientID, "AUTH_APPLE_JWKS_FILE": keys,
                                                         "ACCOUNT_DELETION_GRACE_SECONDS": "0", "ACCOUNT_DELETION_SCHEDULER_INTERVAL_MS": "200"])
        defer { dev.cleanUp() }
        let base = try #require(dev.value("APP_BASE_URL"), "dev.env names the one origin\n\(dev.log)")
        #expect(dev.value("AUTH_URL") == "http://127.0.0.1:\(9999 + offset)")
        #expect(dev.value("JWT_JWKS_FILE") == DevAuth.keySetPath(home: dev.home), "the services of other processes verify its tokens too")
        // A browser app on another origin may call it (supabase-js sends x-supabase-api-version).
        let preflight = try await CLIProcess.shell(
            "curl -s -o /dev/null -w '%{http_code} %header{access-control-allow-origin} %header{access-control-allow-headers}' -X OPTIONS "
                + "-H 'Origin: http://localhost:5173' -H 'Access-Control-Request-Method: POST' "
                + "-H 'Access-Control-Request-Headers: apikey, x-client-info, x-supabase-api-version, content-type' '\(base)/auth/v1/token?grant_type=password'")
        #expect(preflight.output.hasPrefix("204 * ") && preflight.output.contains("x-supabase-api-version"), "\(preflight.output)")
        let anonKey = JWTCodec(secret: try #require(dev.value("JWT_SECRET"))).anonKey
        let python = ProcessInfo.processInfo.environment["PYTHON"] ?? "python3"
        let script = Self.clients.appendingPathComponent("auth_flow.py").path
        let (status, output) = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try Integration.run(python, [script, base, anonKey, keys, Self.appleClientID]) })
            }
        }
        #expect(status == 0, "\(output)\n\(dev.log.suffix(3000))")
        let seen = try #require((try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? [String: Any], "\(output)")
        func object(_ key: String) -> [String: Any] { seen[key] as? [String: Any] ?? [:] }
        func error(_ key: String) -> (Int?, String?, String?) {
            let e = object(key)
            return (e["status"] as? Int, e["code"] as? String, e["message"] as? String)
        }

        // Sign-up (confirmed at once), sign-in, the access token's claims, the user and changes.
        #expect(object("sign_up")["has_session"] as? Bool == true && object("sign_up")["display_name"] as? String == "Reader", "\(seen)")
        let claims = object("claims")
        #expect(claims["alg"] as? String == "ES256" && claims["aud"] as? String == "authenticated" && claims["role"] as? String == "authenticated")
        #expect(claims["aal"] as? String == "aal1" && claims["is_anonymous"] as? Bool == false && claims["lifetime"] as? Int == 3600)
        #expect(claims["has_session_id"] as? Bool == true && claims["sub_is_user"] as? Bool == true && claims["amr"] as? [String] == ["password"])
        #expect(claims["iss"] as? String == base + "/auth/v1")
        #expect(seen["jwks_kid"] as? Bool == true, "the token names the key the key set publishes")
        #expect(seen["settings_apple"] as? Bool == true)
        #expect(seen["get_user"] as? String == object("sign_up")["email"] as? String)
        #expect(object("update_metadata")["display_name"] as? String == "Reader Two" && object("update_metadata")["level"] as? Int == 3)
        #expect(error("old_password_after_change") == (400, "invalid_credentials", "Invalid login credentials"))
        #expect(seen["new_password_works"] as? String == object("sign_up")["email"] as? String)

        // The session on the services (verified through the key set), before and after a refresh.
        let services = object("services")
        #expect((services["quota_limit"] as? Int ?? 0) > 0 && services["continue_status"] as? Int == 200 && services["rooms"] != nil, "\(services)")
        #expect(seen["refresh_rotates"] as? Bool == true && seen["refreshed_works"] as? Bool == true)
        #expect(object("realtime")["joined"] as? Bool == true, "the Realtime join of the user's own channel: \(object("realtime"))")

        // A lost answer does not sign the user out; a replay of a spent token ends the session.
        #expect(seen["parent_reuse_status"] as? Int == 200)
        let replay = object("replay")
        #expect(replay["status"] as? Int == 400 && (replay["body"] as? [String: Any])?["code"] as? String == "refresh_token_already_used", "\(replay)")
        let afterReplay = object("after_replay")
        #expect((afterReplay["body"] as? [String: Any])?["code"] as? String == "refresh_token_not_found", "the session's newest token died with it: \(afterReplay)")
        #expect((object("after_sign_out")["body"] as? [String: Any])?["code"] as? String == "refresh_token_not_found")
        #expect(error("get_user_after_sign_out").1 == "session_not_found")

        // Sign in with Apple: the same Apple user is the same account; the session works on the services.
        let apple = object("apple")
        #expect(apple["provider"] as? String == "apple" && apple["same_user"] as? Bool == true && apple["services"] as? Bool == true, "\(apple)")
        #expect(apple["identity"] as? [String] == ["apple"])
        #expect(error("apple_other_key") == (400, nil, "Bad ID token"))
        #expect(error("apple_expired") == (400, nil, "Bad ID token"))
        #expect(error("apple_other_audience") == (400, "validation_failed", "Unacceptable audience in id_token: [com.example.other]"))
        #expect(error("apple_other_nonce") == (400, nil, "Nonces mismatch"))

        // The errors, as Supabase Auth gives them (no account enumeration on sign-in).
        #expect(error("wrong_password") == (400, "invalid_credentials", "Invalid login credentials"))
        #expect(error("unknown_account") == error("wrong_password"))
        #expect(error("weak_password") == (422, "weak_password", "Password should be at least 6 characters."))
        #expect(object("weak_password")["reasons"] as? [String] == ["length"])
        #expect(error("malformed_email") == (400, "validation_failed", "Unable to validate email address: invalid format"))
        #expect(error("already_registered") == (422, "user_already_exists", "User already registered"))
        #expect(object("broken_body")["status"] as? Int == 400 && (object("broken_body")["body"] as? [String: Any])?["code"] as? String == "bad_json")
        let legacy = object("broken_body_legacy")["body"] as? [String: Any] ?? [:]
        #expect(legacy["code"] as? Int == 400 && legacy["error_code"] as? String == "bad_json" && legacy["msg"] != nil,
                "without the API version header: the older {code, error_code, msg}")

        // Guessing: 429 with Retry-After well before 40 tries, through the client too.
        let guesses = object("guesses")
        let last = guesses["last"] as? [String: Any] ?? [:]
        #expect((guesses["tries"] as? Int ?? 99) <= 20 && last["status"] as? Int == 429, "\(guesses)")
        #expect((last["body"] as? [String: Any])?["code"] as? String == "over_request_rate_limit" && Int(last["retry_after"] as? String ?? "") != nil)
        #expect(error("guess_through_client").0 == 429 && error("guess_through_client").1 == "over_request_rate_limit")

        // Account deletion (no grace period here): the stack's `auth` erasure consumer erases the
        // Apple user with their identity and sessions, and their refresh token stops.
        let deletion = object("deletion")
        #expect(deletion["scheduled"] as? String == "scheduled", "\(deletion)")
        let afterDeletion = deletion["refresh"] as? [String: Any] ?? [:]
        #expect(afterDeletion["status"] as? Int == 400
                    && (afterDeletion["body"] as? [String: Any])?["code"] as? String == "refresh_token_not_found", "\(deletion)")
        #expect((deletion["get_user"] as? [String: Any])?["code"] as? String == "user_not_found", "\(deletion)")
        let userID = try #require(seen["apple_user_id"] as? String)
        let database = PostgresClient(configuration: PostgresConfiguration(url: try #require(dev.value("DATABASE_URL")), maxConnections: 1),
                                      logger: Logger(label: "test", level: .warning))
        let left = try await database.query("""
            SELECT (SELECT count(*) FROM auth_users WHERE id::text = $1) + (SELECT count(*) FROM auth_identities WHERE user_id::text = $1)
                + (SELECT count(*) FROM auth_sessions WHERE user_id::text = $1) AS n
            """, [userID]).first?.decode(Int.self, "n")
        await database.close()
        #expect(left == 0, "the account, its Apple link and its sessions are erased")
    }

    @Test("compose runs Supabase's own auth server behind the gateway at /auth/v1: a pinned image, its schema in the project's PostgreSQL, ES256 keys, Sign in with Apple and a mail sender, and the services verify its sessions through its key set")
    func composeRunsSupabaseAuth() throws {
        let services = try #require(try DeploymentTests.composeDocument()["services"] as? [String: [String: Any]])
        let auth = try #require(services["auth"])
        let image = auth["image"] as? String ?? ""
        #expect(image.hasPrefix("supabase/gotrue:v") || image.hasPrefix("supabase/auth:v"), "a pinned tag: \(image)")
        let environment = auth["environment"] as? [String: Any] ?? [:]
        for key in ["GOTRUE_JWT_KEYS", "GOTRUE_JWT_ISSUER", "GOTRUE_DB_DATABASE_URL", "GOTRUE_EXTERNAL_APPLE_CLIENT_ID", "GOTRUE_SMTP_HOST",
                    "GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL"] {
            #expect(environment[key] != nil, "auth sets \(key)")
        }
        #expect((environment["GOTRUE_DB_DATABASE_URL"] as? String ?? "").contains("@postgres:5432/backbone"))
        #expect((services["ingest"]?["environment"] as? [String: Any])?["JWT_JWKS_URL"] as? String == "${JWT_JWKS_URL:-http://auth:9999/.well-known/jwks.json}",
                "by default, the services verify the auth server's sessions")
        let gateway = try String(contentsOf: Integration.packageRoot.appendingPathComponent("deploy/gateway/nginx.conf"), encoding: .utf8)
        #expect(gateway.contains("server auth:9999 resolve;") && gateway.contains("location /auth/v1/ {"))
        let documented = try String(contentsOf: Integration.packageRoot.appendingPathComponent("docs/auth.md"), encoding: .utf8)
        for setting in ["AUTH_JWT_KEYS", "AUTH_DB_PASSWORD", "AUTH_APPLE_CLIENT_IDS", "AUTH_SMTP_HOST", "API_EXTERNAL_URL"] {
            #expect(documented.contains("`\(setting)`"), "docs/auth.md documents \(setting)")
        }
    }
}
