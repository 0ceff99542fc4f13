import BlockingCalls
import Foundation
import Hashing
import HTTPRouting
import Postgres
import ServiceLogging

/// The subset of Supabase Auth's API (`/auth/v1`, GoTrue) that the apps call, for `backbone dev`:
/// e-mail sign-up (confirmed at once) and sign-in, Sign in with Apple (`grant_type=id_token`),
/// refresh-token rotation, the user and their metadata, sign-out, the settings and the key set.
/// Paths are GoTrue's own (`/signup`, `/token`, …): the gateway strips `/auth/v1`, as Supabase's
/// does. Access tokens are ES256 with Supabase's claims, signed with `key`, whose key set the
/// services read (`JWT_JWKS_FILE`); answers and errors are GoTrue's, so that Supabase's clients
/// behave against it as against Supabase.
public struct DevAuthServer: Sendable {
    public struct Settings: Sendable {
        /// The `iss` of the access tokens: the origin's `/auth/v1`, as Supabase's.
        public var issuer: String
        /// Supabase's default minimum password length.
        public var minimumPasswordLength = 6
        public var accessTokenSeconds: Int64 = 3600
        /// How long a spent refresh token may be used again (concurrent refreshes), as GoTrue's
        /// `GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL`.
        public var reuseInterval: TimeInterval = 10
        /// Sign-ups and sign-ins (password, id token) from one client address: `burst` at once,
        /// then one every `1 / perSecond` seconds.
        public var addressBurst = 30
        public var addressPerSecond = 0.1
        /// Password sign-ins to one account.
        public var accountBurst = 10
        public var accountPerSecond = 1.0 / 30

        public init(issuer: String) { self.issuer = issuer }
    }

    let settings: Settings
    let database: PostgresClient
    let key: SigningKey
    let apple: AppleIDTokens
    let logger: Logger
    let addresses: UserRateLimiter
    let accounts: UserRateLimiter

    public init(settings: Settings, database: PostgresClient, key: SigningKey, apple: AppleIDTokens, logger: Logger) {
        self.settings = settings
        self.database = database
        self.key = key
        self.apple = apple
        self.logger = logger
        addresses = UserRateLimiter(perSecond: settings.addressPerSecond, burst: settings.addressBurst)
        accounts = UserRateLimiter(perSecond: settings.accountPerSecond, burst: settings.accountBurst)
    }

    /// GoTrue's routes (without the gateway's `/auth/v1`).
    public var router: Router {
        var router = Router()
        router.post("/signup", answer(signUp))
        router.post("/token", answer(token))
        router.get("/user", answer(getUser))
        router.put("/user", answer(updateUser))
        router.post("/logout", answer(logout))
        router.get("/settings", answer { _ in .json(self.settingsJSON) })
        router.get("/.well-known/jwks.json", answer { _ in .json(self.key.jwksJSON, raw: true) })
        router.get("/health", answer { _ in .json(["name": "GoTrue", "version": "backbone-dev", "description": "backbone dev's embedded auth"]) })
        return router
    }

    /// The routes answering browser apps of `allowedOrigins` (`CORS_ALLOWED_ORIGINS`) too, with
    /// the headers Supabase's JavaScript client sends and reads (`x-supabase-api-version`).
    public func router(allowedOrigins: [String]) -> Router {
        var routes = router
        var cors = CORSPolicy(allowedOrigins: allowedOrigins)
        cors.allowedHeaders += ", x-supabase-api-version"
        cors.exposedHeaders += ", x-supabase-api-version"
        routes.cors = cors
        return routes
    }

    /// What a handler answers: a JSON body and its status, or an `AuthAPIError`.
    struct Answer {
        var status = 200
        var body: [UInt8]

        static func json(_ object: Any, status: Int = 200) -> Answer { Answer(status: status, body: DevAuthJSON.bytes(object)) }
        static func json(_ bytes: [UInt8], raw: Bool) -> Answer { Answer(body: bytes) }
        static let noContent = Answer(status: 204, body: [])
    }

    private func answer(_ handler: @escaping @Sendable (HTTPRequest) async throws -> Answer) -> HTTPHandler {
        { [logger] request in
            do {
                let made = try await handler(request)
                var headers: HTTPHeaders = made.status == 204 ? [:] : ["Content-Type": "application/json"]
                if request.headers["X-Supabase-Api-Version"] != nil { headers.add(name: "X-Supabase-Api-Version", value: AuthAPIError.apiVersion) }
                return HTTPResponse(status: HTTPStatus(made.status), headers: headers, body: made.body)
            } catch let error as AuthAPIError {
                return error.response(to: request)
            } catch {
                logger.error("auth request failed", metadata: ["http.path": request.path, "error": "\(error)"])
                return AuthAPIError.unexpected.response(to: request)
            }
        }
    }

    var settingsJSON: [String: Any] {
        ["external": ["email": true, "apple": !apple.clientIDs.isEmpty, "phone": false, "anonymous_users": false, "google": false,
                      "github": false, "azure": false, "facebook": false],
         "disable_signup": false, "mailer_autoconfirm": true, "phone_autoconfirm": false, "sms_provider": "", "saml_enabled": false]
    }

    // MARK: - Requests

    /// The body as a JSON object; GoTrue's `bad_json` otherwise.
    func body(_ request: HTTPRequest) throws(AuthAPIError) -> [String: Any] {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(request.body.isEmpty ? Array("{}".utf8) : request.body))
        } catch {
            throw AuthAPIError.badJSON("the body is not JSON")
        }
        guard let object = parsed as? [String: Any] else { throw AuthAPIError.badJSON("the body is not a JSON object") }
        return object
    }

    func limit(_ limiter: UserRateLimiter, _ key: String) throws(AuthAPIError) {
        if let retryAfter = limiter.acquire(key) { throw AuthAPIError.rateLimited(retryAfter: retryAfter) }
    }

    static let emailPattern = try! NSRegularExpression(
        pattern: #"^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$"#)

    /// The address lower-cased, or GoTrue's `validation_failed`.
    func validEmail(_ value: Any?) throws(AuthAPIError) -> String {
        guard let text = value as? String, !text.isEmpty else { throw AuthAPIError.validation("To signup, please provide your email") }
        let email = text.trimmingCharacters(in: .whitespaces).lowercased()
        let range = NSRange(email.startIndex..., in: email)
        guard email.utf8.count <= 255, Self.emailPattern.firstMatch(in: email, range: range) != nil else {
            throw AuthAPIError.validation("Unable to validate email address: invalid format")
        }
        return email
    }

    func checkPassword(_ password: String) throws(AuthAPIError) {
        if password.count < settings.minimumPasswordLength { throw AuthAPIError.weakPassword(minimum: settings.minimumPasswordLength) }
        if password.utf8.count > 72 { throw AuthAPIError.validation("Password cannot be longer than 72 characters", status: 422) }
    }

    func hashPassword(_ password: String) async throws(AuthAPIError) -> String {
        guard let hashed = await BlockingCall.run("auth.argon2", { PasswordHash.make(password) }) else { throw AuthAPIError.unexpected }
        return hashed
    }

    // MARK: - Sign-up and sign-in

    @Sendable func signUp(_ request: HTTPRequest) async throws -> Answer {
        try limit(addresses, request.clientAddress)
        let object = try body(request)
        let email = try validEmail(object["email"])
        guard let password = object["password"] as? String, !password.isEmpty else {
            throw AuthAPIError.validation("Signup requires a valid password", status: 422)
        }
        try checkPassword(password)
        let hashed = try await hashPassword(password)
        let metadata = object["data"] as? [String: Any] ?? [:]
        return try await database.withTransaction { connection in
            guard let user = try await AuthAccounts.createUser(email: email, passwordHash: hashed, provider: "email", userMetadata: metadata,
                                                               in: connection) else {
                throw AuthAPIError(422, "user_already_exists", "User already registered")
            }
            let id = user.id.uuidString.lowercased()
            try await AuthAccounts.addIdentity(userID: user.id, provider: "email", providerID: id,
                                               data: ["sub": id, "email": email, "email_verified": true, "phone_verified": false],
                                               email: email, in: connection)
            // Confirmed at once, as Supabase's local stack does: the mail it would send is logged.
            logger.notice("sign-up confirmed without a mail (backbone dev)", metadata: ["auth.user": id])
            return try await session(for: user.id, method: "password", in: connection)
        }
    }

    @Sendable func token(_ request: HTTPRequest) async throws -> Answer {
        switch request.query["grant_type"] {
        case "password": try await passwordGrant(request)
        case "refresh_token": try await refreshGrant(request)
        case "id_token": try await idTokenGrant(request)
        default: throw AuthAPIError(400, "unsupported_grant_type", "unsupported_grant_type")
        }
    }

    func passwordGrant(_ request: HTTPRequest) async throws -> Answer {
        try limit(addresses, request.clientAddress)
        let object = try body(request)
        guard let given = object["email"] as? String, !given.isEmpty, let password = object["password"] as? String else {
            throw AuthAPIError.invalidCredentials
        }
        let email = given.trimmingCharacters(in: .whitespaces).lowercased()
        try limit(accounts, email)
        let user = try await database.withConnection { try await AuthAccounts.user(email: email, in: $0) }
        // An unknown address costs as long as a wrong password and answers the same.
        let stored = user?.passwordHash ?? PasswordHash.decoy
        let matches = await BlockingCall.run("auth.argon2") { PasswordHash.verify(password, against: stored) }
        guard let user, user.passwordHash != nil, matches else { throw AuthAPIError.invalidCredentials }
        return try await database.withTransaction { try await session(for: user.id, method: "password", in: $0) }
    }

    func idTokenGrant(_ request: HTTPRequest) async throws -> Answer {
        try limit(addresses, request.clientAddress)
        let object = try body(request)
        let provider = object["provider"] as? String ?? ""
        guard provider == "apple" || provider == AppleIDTokens.issuer else {
            throw AuthAPIError.validation("Custom OIDC provider \"\(provider)\" not allowed")
        }
        guard let idToken = object["id_token"] as? String, !idToken.isEmpty else {
            throw AuthAPIError.validation("id_token required")
        }
        let verified = try await apple.verify(idToken, nonce: object["nonce"] as? String)
        return try await database.withTransaction { connection in
            let userID: UUID
            if let known = try await AuthAccounts.identityUser(provider: "apple", providerID: verified.subject, in: connection) {
                userID = known
            } else {
                // A first sign-in: the account of the same verified address, else a new one.
                let linked = verified.emailVerified ? try await verified.email.asyncMap { try await AuthAccounts.user(email: $0, in: connection) } : nil
                if let existing = linked ?? nil {
                    userID = existing.id
                    try await AuthAccounts.addProvider("apple", to: userID, in: connection)
                } else if let made = try await AuthAccounts.createUser(email: verified.email, passwordHash: nil, provider: "apple",
                                                                      userMetadata: [:], in: connection) {
                    userID = made.id
                } else {
                    // The address belongs to an account Apple has not vouched for: a new account without it.
                    guard let made = try await AuthAccounts.createUser(email: nil, passwordHash: nil, provider: "apple", userMetadata: [:],
                                                                       in: connection) else { throw AuthAPIError.unexpected }
                    userID = made.id
                }
                var data: [String: Any] = ["sub": verified.subject, "iss": AppleIDTokens.issuer, "provider_id": verified.subject,
                                           "email_verified": verified.emailVerified]
                if let email = verified.email { data["email"] = email }
                try await AuthAccounts.addIdentity(userID: userID, provider: "apple", providerID: verified.subject, data: data,
                                                   email: verified.email, in: connection)
            }
            return try await session(for: userID, method: "oauth", in: connection)
        }
    }

    /// A new session: its access token, its first refresh token and the user.
    func session(for userID: UUID, method: String, in connection: PostgresConnection) async throws -> Answer {
        let (session, refresh) = try await AuthAccounts.startSession(userID: userID, method: method, in: connection)
        return try await tokens(userID: userID, session: session, method: method, refreshToken: refresh, in: connection)
    }

    func tokens(userID: UUID, session: UUID, method: String, refreshToken: String, in connection: PostgresConnection) async throws -> Answer {
        guard let user = try await AuthAccounts.user(id: userID, in: connection) else { throw AuthAPIError.refreshTokenNotFound }
        let now = Int64(Date().timeIntervalSince1970)
        let expiry = now + settings.accessTokenSeconds
        let claims: [String: Any] = [
            "iss": settings.issuer, "sub": user.id.uuidString.lowercased(), "aud": "authenticated", "exp": expiry, "iat": now,
            "email": user.email ?? "", "phone": "", "app_metadata": DevAuthJSON.object(user.appMetadata),
            "user_metadata": DevAuthJSON.object(user.userMetadata), "role": "authenticated", "aal": "aal1",
            "amr": [["method": method, "timestamp": now]], "session_id": session.uuidString.lowercased(), "is_anonymous": false,
        ]
        guard let access = key.sign(payload: DevAuthJSON.bytes(claims)) else { throw AuthAPIError.unexpected }
        return .json([
            "access_token": access, "token_type": "bearer", "expires_in": settings.accessTokenSeconds, "expires_at": expiry,
            "refresh_token": refreshToken, "user": try await AuthAccounts.userJSON(user, in: connection),
        ])
    }
}

extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
