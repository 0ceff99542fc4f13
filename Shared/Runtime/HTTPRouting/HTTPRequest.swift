import Foundation

public enum HTTPMethod: String, Sendable, Hashable, CaseIterable {
    case get = "GET", head = "HEAD", post = "POST", put = "PUT", delete = "DELETE", patch = "PATCH", options = "OPTIONS"
}

/// Header fields with case-insensitive lookup; order and repeats are kept.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}
    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { add(name: name, value: value) }
    }

    public mutating func add(name: String, value: String) { fields.append((name, value)) }

    public mutating func replaceOrAdd(name: String, value: String) {
        fields.removeAll { Self.namesEqual($0.name, name) }
        fields.append((name, value))
    }

    public subscript(name: String) -> String? {
        fields.first { Self.namesEqual($0.name, name) }?.value
    }

    /// Whether two field names are the same, ignoring case. Field names are ASCII tokens, so
    /// their bytes are compared with ASCII case folded — every request looks up a few headers.
    /// A name with a byte past ASCII is compared as before, by Foundation's case-insensitive
    /// comparison of the text.
    public static func namesEqual(_ a: String, _ b: String) -> Bool {
        let x = a.utf8, y = b.utf8
        var i = x.startIndex, j = y.startIndex
        while i != x.endIndex, j != y.endIndex {
            let p = x[i], q = y[j]
            if p >= 0x80 || q >= 0x80 { return a.caseInsensitiveCompare(b) == .orderedSame }
            if p != q {
                // Equal but for case: both letters, differing only in the 0x20 bit.
                guard p ^ q == 0x20, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(p | 0x20) else { return false }
            }
            i = x.index(after: i)
            j = y.index(after: j)
        }
        if i == x.endIndex && j == y.endIndex { return true }
        // One is longer: equal only if what is left holds a byte past ASCII that folds away.
        let rest = i == x.endIndex ? y[j...].contains { $0 >= 0x80 } : x[i...].contains { $0 >= 0x80 }
        return rest && a.caseInsensitiveCompare(b) == .orderedSame
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }
}

/// A fully received HTTP request, as handed to a route handler.
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    /// The path without the query string, percent-decoded.
    public var path: String
    public var query: [String: String]
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Values of `:name` segments of the matched route.
    public var pathParameters: [String: String]
    /// Peer address, when the server knows it.
    public var remoteAddress: String?
    /// The body as it arrives, for a route registered with `Router.streaming` (`body` is then empty).
    public var bodyStream: HTTPBodyStream?
    /// The route the server's router found for the request (`Router.resolve`), nil until then.
    public internal(set) var route: RouteMatch?

    public init(method: HTTPMethod, path: String, query: [String: String] = [:], headers: HTTPHeaders = [:],
                body: [UInt8] = [], pathParameters: [String: String] = [:], remoteAddress: String? = nil) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.pathParameters = pathParameters
        self.remoteAddress = remoteAddress
    }

    /// The bearer token of the `Authorization` header, if any.
    public var bearerToken: String? {
        guard let value = headers["Authorization"] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].utf8.count == 6, parts[0].lowercased() == "bearer" else { return nil }
        let rest = parts[1]
        // An ASCII first and last byte other than space and tab: nothing to trim, so no
        // Foundation trimming on the path every authenticated request takes.
        if let first = rest.utf8.first, let last = rest.utf8.last,
           first < 0x80, last < 0x80, first != 0x20, first != 0x09, last != 0x20, last != 0x09 {
            return String(rest)
        }
        let token = rest.trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    /// The client's address, for per-client limits: the last entry of `X-Forwarded-For` (the one
    /// the gateway added: nginx's `$proxy_add_x_forwarded_for` appends its peer to whatever the
    /// client sent) when the request came from the gateway on loopback, else the peer itself. The
    /// entries before it are the client's own words, so a client cannot choose its limit's key.
    public var clientAddress: String {
        let peer = remoteAddress ?? "unknown"
        let loopback = peer.hasPrefix("127.") || peer == "::1" || peer.hasPrefix("::ffff:127.")
        if loopback, let forwarded = headers["X-Forwarded-For"]?.split(separator: ",").last {
            let address = forwarded.trimmingCharacters(in: .whitespaces)
            if !address.isEmpty { return address }
        }
        return peer
    }

    /// Decodes the JSON body; malformed JSON is a 400 `INVALID_JSON`.
    public func decode<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws(HTTPError) -> T {
        do {
            return try decoder.decode(T.self, from: Data(body))
        } catch {
            throw HTTPError(.badRequest, code: "INVALID_JSON", message: HTTPError.describe(decodingError: error))
        }
    }

    /// Decodes the JSON body, telling the two failures apart: a body that is not JSON is a 400
    /// `INVALID_JSON`, JSON of another shape (a field missing, of the wrong type or value) a 400
    /// `INVALID_FIELD` naming the field.
    public func decodeFields<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws(HTTPError) -> T {
        do {
            return try decoder.decode(T.self, from: Data(body))
        } catch {
            let isJSON = (try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])) != nil
            throw HTTPError(.badRequest, code: isJSON ? "INVALID_FIELD" : "INVALID_JSON",
                            message: HTTPError.describe(decodingError: error, bodyIsJSON: isJSON))
        }
    }

    /// Splits `a=1&b=two%20words` into a dictionary (the last value of a repeated key wins).
    public static func parseQuery(_ string: Substring) -> [String: String] {
        var result: [String: String] = [:]
        for pair in string.split(separator: "&") where !pair.isEmpty {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(kv[0]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(kv[0])
            let raw = kv.count > 1 ? String(kv[1]) : ""
            result[key] = raw.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? raw
        }
        return result
    }
}
