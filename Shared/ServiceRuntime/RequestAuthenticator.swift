import Auth
import HTTPTypes

/// Turns a request's bearer token into verified claims, or a 401 `UNAUTHENTICATED`.
public struct RequestAuthenticator: Sendable {
    public let codec: JWTCodec

    public init(secret: String) { self.codec = JWTCodec(secret: secret) }

    /// A user token of an account this service erased is refused too (`JWTCodec.revoked`),
    /// unless `acceptingRevoked` (the deletion receipt's route).
    public func claims(_ request: HTTPRequest, acceptingRevoked: Bool = false) throws(HTTPError) -> JWTClaims {
        guard let token = request.bearerToken else {
            throw .unauthenticated("missing bearer token")
        }
        do {
            return try codec.verify(token, acceptingRevoked: acceptingRevoked)
        } catch {
            throw .unauthenticated("token rejected: \(error.code.rawValue)")
        }
    }

    /// The user id (`sub`) of a valid token.
    public func userID(_ request: HTTPRequest) throws(HTTPError) -> String { try claims(request).sub }

    /// Claims of a service token (`role: "service"`); a user token is 403 `FORBIDDEN`.
    public func requireService(_ request: HTTPRequest) throws(HTTPError) -> JWTClaims {
        let claims = try claims(request)
        guard claims.isService else {
            throw HTTPError(.forbidden, code: "FORBIDDEN", message: "a service token is required")
        }
        return claims
    }
}
