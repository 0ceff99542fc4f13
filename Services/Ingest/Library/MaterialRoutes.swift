import Contracts
import Foundation
import HTTPRouting
import ServiceLogging
import ServiceRuntime

/// `PUT /materials/{id}` and `DELETE /materials/{id}`: catalog maintenance with a service
/// token (a user token is 403 `FORBIDDEN`).
struct MaterialRoutes: Sendable {
    let catalog: MaterialCatalog
    let authenticator: RequestAuthenticator
    let logger: Logger
    let retryAfterSeconds: Int

    /// 1970-01-01 … 9999-12-31T23:59:59Z: what a catalog expiry can sensibly be.
    static let expiryRange: ClosedRange<TimeInterval> = 0...253_402_300_799

    func put(_ request: HTTPRequest) async throws -> HTTPResponse {
        _ = try await authenticator.requireService(request)
        let id = try materialID(request)
        let body: MaterialUpsertRequest = try IngestRequestDecoding.decode(MaterialUpsertRequest.self, from: request)
        if body.readingTargetType == .temporaryFile && body.ownerUserId == nil {
            throw IngestRequestDecoding.invalidField("ownerUserId", "a temporaryFile always has an owner")
        }
        if let expiresAt = body.expiresAt, !(Self.expiryRange ~= expiresAt.timeIntervalSince1970) {
            throw IngestRequestDecoding.invalidField("expiresAt", "expiresAt must be within the years 1970…9999")
        }
        for (name, value) in [("knowledgeBaseId", body.knowledgeBaseId), ("ownerUserId", body.ownerUserId)] {
            if let value, !Identifier.isValid(value) {
                throw IngestRequestDecoding.invalidField(name, "\(name) must be \(Identifier.rule)")
            }
        }
        do {
            let entry = try await catalog.upsert(id: id, body)
            return .json(entry, encoder: ContractCoding.encoder)
        } catch {
            throw unavailable(error)
        }
    }

    func delete(_ request: HTTPRequest) async throws -> HTTPResponse {
        _ = try await authenticator.requireService(request)
        let id = try materialID(request)
        let entry: MaterialResponse?
        do {
            entry = try await catalog.markDeleted(id: id)
        } catch {
            throw unavailable(error)
        }
        guard let entry else { throw HTTPError.notFound("no material \(id)") }
        return .json(entry, encoder: ContractCoding.encoder)
    }

    private func materialID(_ request: HTTPRequest) throws(HTTPError) -> String {
        guard let id = request.pathParameters["id"], Identifier.isValid(id) else {
            throw IngestRequestDecoding.invalidField("id", "a material id is \(Identifier.rule)")
        }
        return id
    }

    private func unavailable(_ error: any Error) -> HTTPError {
        logger.error("materials catalog unavailable", metadata: ["error": "\(error)"])
        return HTTPError(.serviceUnavailable, code: ErrorCode.serviceUnavailable.rawValue, message: "catalog unavailable",
                         headers: ["Retry-After": String(retryAfterSeconds)])
    }
}

/// Body decoding shared by the JSON endpoints: a body that is not JSON is 400
/// `INVALID_JSON`; JSON of the wrong shape is 400 `INVALID_FIELD` naming the field — but a
/// malformed `tags` is `INVALID_TAGS` and a malformed `redactions` entry `REDACTION_INVALID`
/// (the seed's codes for a room upload's body). With `snakeCase`, the body's keys are the
/// seed's snake_case (the app's own calls, `/functions/v1/*`), and so are the names in errors.
enum IngestRequestDecoding {
    static func decode<T: Decodable>(_ type: T.Type, from request: HTTPRequest, snakeCase: Bool = false) throws(HTTPError) -> T {
        guard (try? JSONSerialization.jsonObject(with: Data(request.body), options: [.fragmentsAllowed])) != nil else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidJSON.rawValue, message: "body is not valid JSON")
        }
        do {
            return try (snakeCase ? ContractCoding.snakeCaseDecoder : ContractCoding.decoder).decode(T.self, from: Data(request.body))
        } catch {
            let message = HTTPError.describe(decodingError: error, keyName: snakeCase ? Self.snakeCased : { $0 }, bodyIsJSON: true)
            let field: String? = switch error as? DecodingError {
            case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c):
                c.codingPath.first?.stringValue
            default: nil
            }
            let code: ErrorCode = switch field {
            case "tags": .invalidTags
            case "redactions": .redactionInvalid
            default: .invalidField
            }
            throw HTTPError(.badRequest, code: code.rawValue, message: message)
        }
    }

    /// `bytesSource` → `bytes_source`.
    static func snakeCased(_ name: String) -> String {
        var out = ""
        for character in name {
            if character.isUppercase, !out.isEmpty { out += "_" + character.lowercased() } else { out.append(character) }
        }
        return out
    }

    static func invalidField(_ field: String, _ message: String) -> HTTPError {
        HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "\(field): \(message)")
    }
}
