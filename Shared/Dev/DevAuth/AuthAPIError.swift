import Foundation
import HTTPRouting

/// An error as Supabase Auth answers it. Clients that send `X-Supabase-Api-Version: 2024-01-01`
/// or later (supabase-swift, supabase-py, supabase-js) get `{"code": error_code, "message"}`
/// and the version header back; others get the older `{"code": status, "error_code", "msg"}`.
/// An OAuth-style error (a bad id token) is `{"error", "error_description"}` for both.
public struct AuthAPIError: Error, Sendable, CustomStringConvertible {
    public var status: Int
    public var code: String
    public var message: String
    /// Members beside the code and message (`weak_password.reasons`).
    var extra: [String: [String]] = [:]
    var headers: [(String, String)] = []
    var isOAuth = false

    public var description: String { "\(status) \(code): \(message)" }

    init(_ status: Int, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    static func oauth(_ error: String, _ description: String) -> AuthAPIError {
        var made = AuthAPIError(400, error, description)
        made.isOAuth = true
        return made
    }

    static func validation(_ message: String, status: Int = 400) -> AuthAPIError { AuthAPIError(status, "validation_failed", message) }
    static let invalidCredentials = AuthAPIError(400, "invalid_credentials", "Invalid login credentials")
    static let refreshTokenNotFound = AuthAPIError(400, "refresh_token_not_found", "Invalid Refresh Token: Refresh Token Not Found")
    static let refreshTokenAlreadyUsed = AuthAPIError(400, "refresh_token_already_used", "Invalid Refresh Token: Already Used")
    static let noAuthorization = AuthAPIError(401, "no_authorization", "This endpoint requires a valid Bearer token")
    static let sessionNotFound = AuthAPIError(403, "session_not_found", "Session from session_id claim in JWT does not exist")
    static let userNotFound = AuthAPIError(403, "user_not_found", "User from sub claim in JWT does not exist")
    static let unexpected = AuthAPIError(500, "unexpected_failure", "Unexpected failure, please check server logs for more information")

    static func badJWT(_ reason: String) -> AuthAPIError { AuthAPIError(403, "bad_jwt", "invalid JWT: unable to parse or verify signature, \(reason)") }

    static func badJSON(_ reason: String) -> AuthAPIError { AuthAPIError(400, "bad_json", "Could not parse request body as JSON: \(reason)") }

    static func weakPassword(minimum: Int) -> AuthAPIError {
        var made = AuthAPIError(422, "weak_password", "Password should be at least \(minimum) characters.")
        made.extra = ["reasons": ["length"]]
        return made
    }

    static func rateLimited(retryAfter: Int) -> AuthAPIError {
        var made = AuthAPIError(429, "over_request_rate_limit", "Request rate limit reached")
        made.headers = [("Retry-After", String(retryAfter))]
        return made
    }

    /// The first API version whose errors carry the code as `code`.
    static let apiVersion = "2024-01-01"

    /// The answer to `request`.
    func response(to request: HTTPRequest) -> HTTPResponse {
        var object: [String: Any]
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        let versioned = request.headers["X-Supabase-Api-Version"].map { $0 >= Self.apiVersion && $0.utf8.count == 10 } ?? false
        if isOAuth {
            object = ["error": code, "error_description": message]
        } else if versioned {
            object = ["code": code, "message": message]
            headers.add(name: "X-Supabase-Api-Version", value: Self.apiVersion)
        } else {
            object = ["code": status, "error_code": code, "msg": message]
        }
        if !extra.isEmpty {
            object["weak_password"] = extra
        }
        for (name, value) in self.headers { headers.add(name: name, value: value) }
        return HTTPResponse(status: HTTPStatus(status), headers: headers, body: DevAuthJSON.bytes(object))
    }
}

/// JSON of dynamic objects (users' metadata is whatever the app stored), keys sorted.
enum DevAuthJSON {
    static func bytes(_ object: Any) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed])) ?? Data("{}".utf8))
    }

    static func object(_ text: String?) -> [String: Any] {
        guard let text, let data = text.data(using: .utf8) else { return [:] }
        return ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any]) ?? [:]
    }

    static func text(_ object: Any) -> String { String(decoding: bytes(object), as: UTF8.self) }

    /// RFC 3339 with microseconds and `Z`, as Supabase Auth writes times.
    static func time(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
