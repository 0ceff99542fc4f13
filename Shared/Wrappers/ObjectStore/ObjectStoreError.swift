import HTTPClient

/// An error from the object store.
///
/// `description` names the operation, the key and the store's status and error code:
/// never credentials, signatures or presigned URLs.
public struct ObjectStoreError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. Extensible: new codes are new static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The store could not be reached, or the connection broke.
        public static let transport = Code("transport")
        /// The store answered 5xx (or 429 / SlowDown).
        public static let unavailable = Code("unavailable")
        /// The store refused the credentials or the signature (403).
        public static let forbidden = Code("forbidden")
        /// No such object, bucket or upload (404).
        public static let notFound = Code("notFound")
        /// Any other 4xx: the request itself is wrong.
        public static let rejected = Code("rejected")
        /// A local file could not be read or written.
        public static let file = Code("file")
        /// The store's answer could not be understood.
        public static let invalidResponse = Code("invalidResponse")
        /// An argument is invalid (an empty key, a part number outside 1…10000).
        public static let invalidArgument = Code("invalidArgument")
    }

    public var code: Code
    public var message: String
    /// The object key concerned, if any.
    public var key: String?
    /// The HTTP status the store answered, if any.
    public var status: Int?
    /// The store's own error code (`NoSuchKey`, `SignatureDoesNotMatch`…), if any.
    public var storeCode: String?

    public init(code: Code, message: String, key: String? = nil, status: Int? = nil, storeCode: String? = nil) {
        self.code = code
        self.message = message
        self.key = key
        self.status = status
        self.storeCode = storeCode
    }

    /// A transfer that got no answer: `transport` or `file` alike.
    init(_ error: HTTPClientError) {
        self.init(code: error.code == .file ? .file : .transport, message: error.message)
    }

    /// Network failures and 5xx may succeed when tried again; 403, 404 and other 4xx will not.
    public var isRetriable: Bool { code == .transport || code == .unavailable }

    /// Maps an HTTP status to a code.
    static func code(forStatus status: Int, storeCode: String?) -> Code {
        // A store asking to slow down is unavailable for now, whatever status it sent that with.
        if storeCode == "SlowDown" { return .unavailable }
        switch status {
        case 403: return .forbidden
        case 404: return .notFound
        case 429, 500...599: return .unavailable
        default: return .rejected
        }
    }

    public var description: String {
        var parts = ["object store \(code)"]
        if let status { parts.append("status \(status)") }
        if let storeCode { parts.append(storeCode) }
        if let key { parts.append("key \(key)") }
        return parts.joined(separator: ", ") + ": " + message
    }
}
