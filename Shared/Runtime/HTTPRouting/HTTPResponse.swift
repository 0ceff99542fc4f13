import Foundation

public struct HTTPStatus: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public init(_ code: Int) { self.rawValue = code }

    public static let ok = HTTPStatus(200)
    public static let created = HTTPStatus(201)
    public static let accepted = HTTPStatus(202)
    public static let noContent = HTTPStatus(204)
    public static let switchingProtocols = HTTPStatus(101)
    public static let badRequest = HTTPStatus(400)
    public static let unauthorized = HTTPStatus(401)
    public static let forbidden = HTTPStatus(403)
    public static let notFound = HTTPStatus(404)
    public static let methodNotAllowed = HTTPStatus(405)
    public static let requestTimeout = HTTPStatus(408)
    public static let conflict = HTTPStatus(409)
    public static let payloadTooLarge = HTTPStatus(413)
    public static let unprocessableEntity = HTTPStatus(422)
    public static let tooManyRequests = HTTPStatus(429)
    public static let internalServerError = HTTPStatus(500)
    public static let serviceUnavailable = HTTPStatus(503)

    public var description: String { String(rawValue) }
}

public struct HTTPResponse: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response from an `Encodable` value.
    public static func json<T: Encodable>(_ value: T, status: HTTPStatus = .ok, headers: HTTPHeaders = [:],
                                          encoder: JSONEncoder = HTTPResponse.defaultEncoder) -> HTTPResponse {
        do {
            var h = headers
            h.replaceOrAdd(name: "Content-Type", value: "application/json")
            return HTTPResponse(status: status, headers: h, body: Array(try encoder.encode(value)))
        } catch {
            return HTTPError(.internalServerError, code: "INTERNAL", message: "response could not be encoded").response
        }
    }

    public static func text(_ text: String, status: HTTPStatus = .ok, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": contentType], body: Array(text.utf8))
    }

    public static let defaultEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}

/// An error that a handler throws to answer with a status and the JSON body
/// `{"error":{"code","message"}}`. Any other error thrown by a handler is a 500 `INTERNAL`
/// whose message reveals nothing of the cause.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    public var status: HTTPStatus
    public var code: String
    public var message: String
    public var headers: HTTPHeaders

    public init(_ status: HTTPStatus, code: String, message: String, headers: HTTPHeaders = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public var description: String { "HTTP \(status.rawValue) \(code): \(message)" }

    private struct Body: Encodable {
        struct Inner: Encodable { let code: String; let message: String }
        let error: Inner
    }

    public var response: HTTPResponse {
        var response = HTTPResponse.json(Body(error: .init(code: code, message: message)), status: status)
        for (name, value) in headers { response.headers.replaceOrAdd(name: name, value: value) }
        return response
    }

    public static func notFound(_ message: String = "no such route") -> HTTPError {
        HTTPError(.notFound, code: "NOT_FOUND", message: message)
    }

    public static func unauthenticated(_ message: String = "a valid bearer token is required") -> HTTPError {
        HTTPError(.unauthorized, code: "UNAUTHENTICATED", message: message, headers: ["WWW-Authenticate": "Bearer"])
    }

    public static let internalError = HTTPError(.internalServerError, code: "INTERNAL", message: "internal error")

    /// A request whose percent-decoded path is not UTF-8 (`%FF`, a cut or overlong sequence, an
    /// encoded surrogate): read as a string, every bad sequence would become U+FFFD, and
    /// different paths would name one resource. Servers answer it before routing.
    public static let pathNotUTF8 = HTTPError(
        .badRequest, code: "INVALID_FIELD", message: "path: its percent-decoded bytes are not UTF-8 (e.g. %FF), which no resource's name is")

    /// A human sentence for a `DecodingError`, naming the field path, never the raw input.
    /// `keyName` renders a key as the client wrote it (a body decoded from snake_case keys).
    /// `bodyIsJSON`: the body is known to parse as JSON. Foundation's decoder then still reports
    /// a number that does not fit its field (`1.5` or `1e30` for a whole number) as data that
    /// is not JSON, naming no field: said as what it is.
    public static func describe(decodingError error: any Error, keyName: (String) -> String = { $0 },
                                bodyIsJSON: Bool = false) -> String {
        guard let error = error as? DecodingError else { return "body is not valid JSON" }
        if bodyIsJSON, case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
            return "a number in the body does not fit its field (a fraction, or a value out of range, where a whole number is expected)"
        }
        func path(_ context: DecodingError.Context) -> String {
            let p = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? keyName($0.stringValue) }.joined(separator: ".")
            return p.isEmpty ? "body" : p
        }
        switch error {
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "body is not valid JSON" : "invalid value at \(path(context))"
        case .keyNotFound(let key, let context):
            let parent = path(context)
            return "missing field \(parent == "body" ? keyName(key.stringValue) : parent + "." + keyName(key.stringValue))"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "wrong type at \(path(context))"
        @unknown default:
            return "body is not valid JSON"
        }
    }
}
