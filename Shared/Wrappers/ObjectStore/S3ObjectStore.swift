import Foundation
import HTTPClient
import Hashing

/// An `ObjectStore` speaking the S3 REST API: path-style addressing (`{endpoint}/{bucket}/{key}`),
/// Signature V4 on every request, HTTP through libcurl on dedicated threads.
public struct S3ObjectStore: ObjectStore {
    public let configuration: S3Configuration
    let signer: SignatureV4
    /// Longest a presigned URL may live (S3's own limit is 7 days).
    public static let maximumPresignedLifetime: Duration = .seconds(7 * 24 * 3600)

    public init(configuration: S3Configuration) {
        self.configuration = configuration
        self.signer = SignatureV4(accessKeyId: configuration.accessKeyId, secretAccessKey: configuration.secretAccessKey,
                                  region: configuration.region)
    }

    // MARK: - Requests

    func objectPath(_ key: String) -> String {
        key.isEmpty ? "/\(S3URIEncoding.encode(configuration.bucket))"
            : "/\(S3URIEncoding.encode(configuration.bucket))/\(S3URIEncoding.encode(key, keepSlash: true))"
    }

    /// `host[:port]` of a base URL, as the Host header carries it.
    static func hostHeader(_ base: String) -> String {
        guard let components = URLComponents(string: base), let host = components.host else { return base }
        return components.port.map { "\(host):\($0)" } ?? host
    }

    private func url(base: String, path: String, query: [(String, String)]) -> String {
        let queryText = SignatureV4.canonicalQuery(query)
        return base + path + (queryText.isEmpty ? "" : "?" + queryText)
    }

    /// The label of the threads transfers run on.
    static let transferLabel = "objectstore.curl"

    /// Signs with the `Authorization` header and sends.
    func send(method: String, key: String, query: [(String, String)] = [], headers extra: [(String, String)] = [],
              body: HTTPExchange.Body = .none, sink: HTTPExchange.Sink = .memory) async throws(ObjectStoreError) -> HTTPAnswer {
        let exchange = signedExchange(method: method, key: key, query: query, headers: extra, body: body, sink: sink)
        do { return try await CurlTransfer.perform(exchange, label: Self.transferLabel) } catch { throw ObjectStoreError(error) }
    }

    func signedExchange(method: String, key: String, query: [(String, String)], headers extra: [(String, String)],
                        body: HTTPExchange.Body, sink: HTTPExchange.Sink) -> HTTPExchange {
        let date = Date()
        let payloadHash: String
        switch body {
        case .none: payloadHash = SignatureV4.emptyPayloadHash
        case .bytes(let bytes): payloadHash = Digest.hex(Digest.sha256(bytes))
        case .file, .source: payloadHash = SignatureV4.unsignedPayload
        }
        let path = objectPath(key)
        var headers = extra + [
            ("host", Self.hostHeader(configuration.endpoint)),
            ("x-amz-date", SignatureV4.amzDate(date)),
            ("x-amz-content-sha256", payloadHash),
        ]
        let request = SignatureV4.Request(method: method, path: path, query: query, headers: headers, payloadHash: payloadHash)
        headers.append(("Authorization", signer.authorization(for: request, date: date)))
        return HTTPExchange(method: method, url: url(base: configuration.endpoint, path: path, query: query),
                            headers: headers.filter { $0.0 != "host" }, body: body, sink: sink)
    }

    /// Throws the store's error for a non-2xx answer.
    func check(_ answer: HTTPAnswer, key: String?, accepting extra: Set<Int> = []) throws(ObjectStoreError) {
        guard !(200..<300).contains(answer.status), !extra.contains(answer.status) else { return }
        throw Self.error(for: answer, key: key)
    }

    static func error(for answer: HTTPAnswer, key: String?) -> ObjectStoreError {
        let storeCode = S3XML.first("Code", in: answer.body)
        let message = S3XML.first("Message", in: answer.body) ?? "the store answered \(answer.status)"
        return ObjectStoreError(code: ObjectStoreError.code(forStatus: answer.status, storeCode: storeCode),
                                message: message, key: key, status: answer.status, storeCode: storeCode)
    }

    static func validate(_ key: String) throws(ObjectStoreError) {
        guard !key.isEmpty, !key.hasPrefix("/"), key.utf8.count <= 1024 else {
            throw ObjectStoreError(code: .invalidArgument, message: "object keys are 1…1024 bytes without a leading slash",
                                   key: key)
        }
    }

    // MARK: - Objects

    @discardableResult
    public func put(_ bytes: [UInt8], key: String, contentType: String) async throws(ObjectStoreError) -> String {
        try Self.validate(key)
        let answer = try await send(method: "PUT", key: key, headers: [("content-type", contentType)], body: .bytes(bytes))
        try check(answer, key: key)
        return Self.unquoted(answer.headers["etag"] ?? "")
    }

    @discardableResult
    public func put(fileAt path: String, key: String, contentType: String) async throws(ObjectStoreError) -> String {
        try Self.validate(key)
        let answer = try await send(method: "PUT", key: key, headers: [("content-type", contentType)], body: .file(path))
        try check(answer, key: key)
        return Self.unquoted(answer.headers["etag"] ?? "")
    }

    @discardableResult
    public func put(from source: any HTTPUploadSource, length: Int64, key: String,
                    contentType: String) async throws(ObjectStoreError) -> String {
        try Self.validate(key)
        let answer = try await send(method: "PUT", key: key, headers: [("content-type", contentType)],
                                    body: .source(source, length: length))
        try check(answer, key: key)
        return Self.unquoted(answer.headers["etag"] ?? "")
    }

    public func uploadPart(from source: any HTTPUploadSource, length: Int64, key: String, uploadId: String,
                           partNumber: Int) async throws(ObjectStoreError) -> String {
        try Self.validate(key)
        guard (1...10_000).contains(partNumber) else {
            throw ObjectStoreError(code: .invalidArgument, message: "part numbers are 1…10000", key: key)
        }
        let answer = try await send(method: "PUT", key: key, query: [("partNumber", String(partNumber)), ("uploadId", uploadId)],
                                    body: .source(source, length: length))
        try check(answer, key: key)
        return Self.unquoted(answer.headers["etag"] ?? "")
    }

    public func get(_ key: String) -> ObjectByteStream {
        let (stream, continuation) = ObjectByteStream.make()
        do { try Self.validate(key) } catch {
            continuation.finish(throwing: error)
            return stream
        }
        let exchange = signedExchange(method: "GET", key: key, query: [], headers: [], body: .none, sink: .stream(continuation))
        CurlTransfer.start(exchange, label: Self.transferLabel) { result in
            switch result {
            case .success(let answer) where (200..<300).contains(answer.status): continuation.finish()
            case .success(let answer): continuation.finish(throwing: Self.error(for: answer, key: key))
            case .failure(let error): continuation.finish(throwing: ObjectStoreError(error))
            }
        }
        return stream
    }

    @discardableResult
    public func get(_ key: String, toFileAt path: String) async throws(ObjectStoreError) -> Int64 {
        try Self.validate(key)
        let answer = try await send(method: "GET", key: key, sink: .file(path))
        do { try check(answer, key: key) } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber
        return size?.int64Value ?? 0
    }

    public func head(_ key: String) async throws(ObjectStoreError) -> ObjectInfo? {
        try Self.validate(key)
        let answer = try await send(method: "HEAD", key: key)
        if answer.status == 404 { return nil }
        try check(answer, key: key)
        guard let size = answer.headers["content-length"].flatMap(Int64.init) else {
            throw ObjectStoreError(code: .invalidResponse, message: "HEAD without Content-Length", key: key)
        }
        let modified = answer.headers["last-modified"].flatMap(Self.httpDate)
        return ObjectInfo(key: key, size: size, etag: Self.unquoted(answer.headers["etag"] ?? ""), lastModified: modified)
    }

    public func delete(_ key: String) async throws(ObjectStoreError) {
        try Self.validate(key)
        let answer = try await send(method: "DELETE", key: key)
        try check(answer, key: key, accepting: [404])
    }

    /// Pages through ListObjectsV2 (at most 10,000 pages of 1,000 keys).
    public func list(prefix: String) async throws(ObjectStoreError) -> [ObjectInfo] {
        var objects: [ObjectInfo] = []
        var token: String?
        for _ in 0..<10_000 {
            var query = [("list-type", "2"), ("prefix", prefix)]
            if let token { query.append(("continuation-token", token)) }
            let answer = try await send(method: "GET", key: "", query: query)
            try check(answer, key: nil)
            for entry in S3XML.all("Contents", in: answer.body) {
                guard let key = S3XML.first("Key", in: entry), let size = S3XML.first("Size", in: entry).flatMap(Int64.init)
                else { continue }
                objects.append(ObjectInfo(key: key, size: size, etag: Self.unquoted(S3XML.first("ETag", in: entry) ?? "")))
            }
            guard S3XML.first("IsTruncated", in: answer.body) == "true",
                  let next = S3XML.first("NextContinuationToken", in: answer.body) else { break }
            token = next
        }
        return objects.sorted { $0.key < $1.key }
    }

    // MARK: - Helpers

    public static func unquoted(_ etag: String) -> String {
        var text = etag.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#34;", with: "\"")
        if text.hasPrefix("\"") { text.removeFirst() }
        if text.hasSuffix("\"") { text.removeLast() }
        return text
    }

    /// An ISO 8601 instant as S3's XML writes it (`2026-12-04T20:00:00.000Z`, fraction optional).
    static func isoDate(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }
}
