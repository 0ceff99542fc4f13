import Foundation
import Hashing

/// AWS Signature Version 4 for S3: the `Authorization` header and presigned query strings.
///
/// The signing key is derived from the secret per date; the secret never leaves this type
/// and is not part of any description.
public struct SignatureV4: Sendable {
    public static let algorithm = "AWS4-HMAC-SHA256"
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    public let accessKeyId: String
    private let secretAccessKey: String
    public let region: String
    public let service: String

    public init(accessKeyId: String, secretAccessKey: String, region: String, service: String = "s3") {
        self.accessKeyId = accessKeyId
        self.secretAccessKey = secretAccessKey
        self.region = region
        self.service = service
    }

    /// A request to sign: the path is already the canonical URI (each segment percent-encoded).
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var query: [(String, String)]
        /// Header names in any case; they are lower-cased and trimmed for signing.
        public var headers: [(String, String)]
        /// Hex SHA-256 of the body, or `UNSIGNED-PAYLOAD`.
        public var payloadHash: String

        public init(method: String, path: String, query: [(String, String)] = [], headers: [(String, String)],
                    payloadHash: String) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.payloadHash = payloadHash
        }
    }

    // MARK: - Steps (public so they can be checked against the published examples)

    public static func amzDate(_ date: Date) -> String {
        let t = utc(date)
        return digits(t.tm_year + 1900, 4) + digits(t.tm_mon + 1, 2) + digits(t.tm_mday, 2) + "T"
            + digits(t.tm_hour, 2) + digits(t.tm_min, 2) + digits(t.tm_sec, 2) + "Z"
    }

    public static func dateStamp(_ date: Date) -> String {
        let t = utc(date)
        return digits(t.tm_year + 1900, 4) + digits(t.tm_mon + 1, 2) + digits(t.tm_mday, 2)
    }

    /// The UTC calendar fields of `date` (whole seconds). `gmtime_r` instead of a
    /// `DateFormatter`, which costs far more to build than a whole signature (a page of
    /// presigned links signs dozens of URLs per request).
    private static func utc(_ date: Date) -> tm {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var fields = tm()
        _ = gmtime_r(&seconds, &fields)
        return fields
    }

    private static func digits(_ value: Int32, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    public func scope(_ date: Date) -> String { "\(Self.dateStamp(date))/\(region)/\(service)/aws4_request" }

    /// `name;name;…`, sorted, lower-case.
    public static func signedHeaders(_ headers: [(String, String)]) -> String {
        canonicalHeaderPairs(headers).map(\.0).joined(separator: ";")
    }

    private static func canonicalHeaderPairs(_ headers: [(String, String)]) -> [(String, String)] {
        var merged: [String: [String]] = [:]
        for (name, value) in headers {
            let collapsed = value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            merged[name.lowercased().trimmingCharacters(in: .whitespaces), default: []].append(collapsed)
        }
        return merged.map { ($0.key, $0.value.joined(separator: ",")) }.sorted { $0.0 < $1.0 }
    }

    public static func canonicalQuery(_ query: [(String, String)]) -> String {
        let encoded: [(name: String, value: String)] = query.map { pair in
            (S3URIEncoding.encode(pair.0), S3URIEncoding.encode(pair.1))
        }
        let sorted = encoded.sorted { a, b in a.name == b.name ? a.value < b.value : a.name < b.name }
        return sorted.map { pair in pair.name + "=" + pair.value }.joined(separator: "&")
    }

    public static func canonicalRequest(_ request: Request) -> String {
        let headers = canonicalHeaderPairs(request.headers)
        return [
            request.method,
            request.path,
            canonicalQuery(request.query),
            headers.map { "\($0.0):\($0.1)\n" }.joined(),
            headers.map(\.0).joined(separator: ";"),
            request.payloadHash,
        ].joined(separator: "\n")
    }

    public func stringToSign(canonicalRequest: String, date: Date) -> String {
        [Self.algorithm, Self.amzDate(date), scope(date), Digest.hex(Digest.sha256(Array(canonicalRequest.utf8)))]
            .joined(separator: "\n")
    }

    public func signature(stringToSign: String, date: Date) -> String {
        var key = Digest.hmacSHA256(key: Array("AWS4\(secretAccessKey)".utf8), message: Array(Self.dateStamp(date).utf8))
        for part in [region, service, "aws4_request"] { key = Digest.hmacSHA256(key: key, message: Array(part.utf8)) }
        return Digest.hex(Digest.hmacSHA256(key: key, message: Array(stringToSign.utf8)))
    }

    // MARK: - Signing

    /// The `Authorization` header value for `request`, whose headers must already include
    /// `host`, `x-amz-date` and `x-amz-content-sha256`.
    public func authorization(for request: Request, date: Date) -> String {
        let toSign = stringToSign(canonicalRequest: Self.canonicalRequest(request), date: date)
        return "\(Self.algorithm) Credential=\(accessKeyId)/\(scope(date)),SignedHeaders=\(Self.signedHeaders(request.headers))"
            + ",Signature=\(signature(stringToSign: toSign, date: date))"
    }

    /// The query items of a presigned URL for `request` (whose `query` holds the operation's
    /// own parameters and whose headers are those the client must send), valid `expires` seconds.
    public func presignedQuery(for request: Request, date: Date, expires: Int) -> [(String, String)] {
        var signing = request
        signing.payloadHash = Self.unsignedPayload
        signing.query += [
            ("X-Amz-Algorithm", Self.algorithm),
            ("X-Amz-Credential", "\(accessKeyId)/\(scope(date))"),
            ("X-Amz-Date", Self.amzDate(date)),
            ("X-Amz-Expires", String(expires)),
            ("X-Amz-SignedHeaders", Self.signedHeaders(request.headers)),
        ]
        let toSign = stringToSign(canonicalRequest: Self.canonicalRequest(signing), date: date)
        return signing.query + [("X-Amz-Signature", signature(stringToSign: toSign, date: date))]
    }
}

/// S3's URI encoding: every byte except unreserved characters is `%XX` (upper-case hex);
/// in paths `/` stays.
public enum S3URIEncoding {
    public static func encode(_ text: String, keepSlash: Bool = false) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                 UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepSlash:
                out.append("/")
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }
}
