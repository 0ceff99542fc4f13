import Auth
import HTTPRouting

/// Turns a request's bearer token into verified claims, or a 401 `UNAUTHENTICATED` whose
/// message says why the token was refused (`token rejected (anon_key): …`).
public struct RequestAuthenticator: Sendable {
    public let codec: JWTCodec

    public init(secret: String) { self.codec = JWTCodec(secret: secret) }

    public init(codec: JWTCodec) { self.codec = codec }

    /// A user token of an account this service erased is refused too (`JWTCodec.revoked`),
    /// unless `acceptingRevoked` (the deletion receipt's route). A token naming a key the key
    /// set does not hold waits for the set to be read again (`JWTCodec.verifyRefreshingKeys`).
    /// `acceptingAnonymous`: the project's anon key too, for a route that serves signed-out readers.
    public func claims(_ request: HTTPRequest, acceptingRevoked: Bool = false,
                       acceptingAnonymous: Bool = false) async throws(HTTPError) -> JWTClaims {
        guard let token = request.bearerToken else {
            throw .unauthenticated("missing bearer token")
        }
        do {
            return try await codec.verifyRefreshingKeys(token, acceptingRevoked: acceptingRevoked, acceptingAnonymous: acceptingAnonymous)
        } catch {
            throw .unauthenticated("token rejected (\(error.code.rawValue)): \(error.message)")
        }
    }

    /// The user id (`sub`) of a valid token.
    public func userID(_ request: HTTPRequest) async throws(HTTPError) -> String { try await claims(request).sub }

    /// Claims of a service token (`role: "service"` or `"service_role"`); a user token is 403 `FORBIDDEN`.
    public func requireService(_ request: HTTPRequest) async throws(HTTPError) -> JWTClaims {
        let claims = try await claims(request)
        guard claims.isService else {
            throw HTTPError(.forbidden, code: "FORBIDDEN", message: "a service token is required")
        }
        return claims
    }
}
