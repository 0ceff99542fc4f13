import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The small HTTP client of `backbone demo` (Foundation's `URLSession`, which works on Linux),
/// turning "nothing listens there" into an error that names the service and its URL.
package struct DemoHTTPClient {
    package struct Response {
        let status: Int
        let body: Data

        var text: String { String(decoding: body, as: UTF8.self) }

        /// The body re-indented for reading (or as it came when it is not JSON).
        var pretty: String {
            guard let object = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]),
                  let data = try? JSONSerialization.data(withJSONObject: object,
                                                         options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
            else { return text }
            return String(decoding: data, as: UTF8.self)
        }

        func decode<T: Decodable>(_ type: T.Type) -> T? { try? JSONDecoder().decode(T.self, from: body) }
    }

    let session: URLSession

    /// `timeout`: how long a request may wait for an answer (`backbone status` asks `/readyz` briefly).
    package init(timeout: TimeInterval = 15) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        session = URLSession(configuration: configuration)
    }

    /// `service` names the service in errors ("ingest at http://…").
    func send(_ method: String, service: String, base: String, path: String, token: String?, body: Data? = nil) async throws -> Response {
        try await send(method, service: service, url: base.hasSuffix("/") ? String(base.dropLast()) + path : base + path,
                       token: token, body: body, contentType: "application/json")
    }

    /// `url` as it is (a presigned storage URL); `contentType` is sent only when given.
    func send(_ method: String, service: String, url text: String, token: String? = nil, body: Data? = nil,
              contentType: String? = nil) async throws -> Response {
        guard let url = URL(string: text) else {
            throw CommandError(code: .serviceUnavailable, message: "not a URL", context: service)
        }
        let path = url.path
        let base = text
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = body
            if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        }
        let session = self.session
        let result: Result<Response, any Error> = await withCheckedContinuation { continuation in
            session.dataTask(with: request) { data, response, error in
                if let error {
                    continuation.resume(returning: .failure(error))
                } else if let http = response as? HTTPURLResponse {
                    continuation.resume(returning: .success(Response(status: http.statusCode, body: data ?? Data())))
                } else {
                    continuation.resume(returning: .failure(URLError(.badServerResponse)))
                }
            }.resume()
        }
        switch result {
        case .success(let response):
            return response
        case .failure(let error):
            throw CommandError(code: .serviceUnavailable,
                               message: "\(method) \(path) failed: \(error.localizedDescription) — is it running? (start it with `backbone dev`)",
                               context: "\(service) at \(base)", isRetriable: true)
        }
    }
}
