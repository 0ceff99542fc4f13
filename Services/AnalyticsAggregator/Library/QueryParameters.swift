import Contracts
import Foundation
import HTTPRouting

/// Strict parsing of query parameters: anything malformed or out of range is a 400
/// `INVALID_QUERY` naming the parameter.
enum QueryParameters {
    static func int(_ request: HTTPRequest, _ name: String, default fallback: Int, range: ClosedRange<Int>) throws(HTTPError) -> Int {
        guard let text = request.query[name] else { return fallback }
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)), range.contains(value) else {
            throw invalid("\(name) must be an integer within \(range.lowerBound)…\(range.upperBound)")
        }
        return value
    }

    static func invalid(_ message: String) -> HTTPError {
        HTTPError(.badRequest, code: ErrorCode.invalidQuery.rawValue, message: message)
    }
}
