import Foundation

extension HTTPError {
    /// The error as the PostgREST-compatible tables answer it: PostgREST's top-level
    /// `code`/`message`/`details`/`hint` (what Supabase clients read into their `APIError`) next
    /// to the house `{"error":{"code","message"}}`. `details` defaults to null.
    public func postgRESTResponse(details: String? = nil) -> HTTPResponse {
        struct Body: Encodable {
            struct Inner: Encodable { let code: String; let message: String }
            let code: String
            let details: String?
            let error: Inner
            let hint: String?
            let message: String

            func encode(to encoder: any Encoder) throws {
                enum Key: String, CodingKey { case code, details, error, hint, message }
                var c = encoder.container(keyedBy: Key.self)
                try c.encode(code, forKey: .code)
                try c.encode(details, forKey: .details)
                try c.encode(error, forKey: .error)
                try c.encode(hint, forKey: .hint)
                try c.encode(message, forKey: .message)
            }
        }
        var response = HTTPResponse.json(Body(code: code, details: details, error: .init(code: code, message: message), hint: nil,
                                              message: message), status: status)
        for (name, value) in headers { response.headers.replaceOrAdd(name: name, value: value) }
        response.headers.replaceOrAdd(name: "Content-Type", value: "application/json; charset=utf-8")
        return response
    }
}
