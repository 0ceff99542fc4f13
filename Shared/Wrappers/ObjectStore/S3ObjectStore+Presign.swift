import Foundation
import HTTPClient
import Lifecycle

extension S3ObjectStore {
    /// Seconds of a presigned URL's life: at least 1, at most `maximumPresignedLifetime`.
    static func seconds(_ duration: Duration) throws(ObjectStoreError) -> Int {
        let seconds = Int(duration.wholeSeconds)
        guard seconds >= 1, duration <= maximumPresignedLifetime else {
            throw ObjectStoreError(code: .invalidArgument, message: "a presigned URL lives 1 s … 7 days")
        }
        return seconds
    }

    /// Signs `method` on `key` for the public endpoint's host; `headers` are signed and must
    /// be sent as they are.
    func presign(method: String, key: String, query: [(String, String)], headers: [(String, String)],
                 expiresIn: Duration, date: Date = Date()) throws(ObjectStoreError) -> PresignedRequest {
        try Self.validate(key)
        let expires = try Self.seconds(expiresIn)
        let path = objectPath(key)
        let signedHeaders = headers + [("host", Self.hostHeader(configuration.publicEndpoint))]
        let request = SignatureV4.Request(method: method, path: path, query: query, headers: signedHeaders,
                                          payloadHash: SignatureV4.unsignedPayload)
        let signedQuery = signer.presignedQuery(for: request, date: date, expires: expires)
        let url = configuration.publicEndpoint + path + "?" + SignatureV4.canonicalQuery(signedQuery)
        return PresignedRequest(method: method, url: url, headers: Dictionary(uniqueKeysWithValues: headers),
                                expiresAt: date.addingTimeInterval(TimeInterval(expires)))
    }

    /// `content-length` is signed (when given): the store refuses a body of any other size.
    public func presignPut(key: String, contentLength: Int64?, contentType: String?,
                           expiresIn: Duration) throws(ObjectStoreError) -> PresignedRequest {
        var headers = contentLength.map { [("Content-Length", String($0))] } ?? []
        if let contentType { headers.append(("Content-Type", contentType)) }
        return try presign(method: "PUT", key: key, query: [], headers: headers, expiresIn: expiresIn)
    }

    public func presignGet(key: String, expiresIn: Duration) throws(ObjectStoreError) -> PresignedRequest {
        try presign(method: "GET", key: key, query: [], headers: [], expiresIn: expiresIn)
    }

    public func presignUploadPart(key: String, uploadId: String, partNumber: Int, contentLength: Int64,
                                  expiresIn: Duration) throws(ObjectStoreError) -> PresignedRequest {
        guard (1...10_000).contains(partNumber) else {
            throw ObjectStoreError(code: .invalidArgument, message: "part numbers are 1…10000", key: key)
        }
        return try presign(method: "PUT", key: key, query: [("partNumber", String(partNumber)), ("uploadId", uploadId)],
                           headers: [("Content-Length", String(contentLength))], expiresIn: expiresIn)
    }

    // MARK: - Multipart

    public func createMultipartUpload(key: String, contentType: String) async throws(ObjectStoreError) -> String {
        try Self.validate(key)
        let answer = try await send(method: "POST", key: key, query: [("uploads", "")], headers: [("content-type", contentType)])
        try check(answer, key: key)
        guard let id = S3XML.first("UploadId", in: answer.body) else {
            throw ObjectStoreError(code: .invalidResponse, message: "no UploadId in the answer", key: key)
        }
        return id
    }

    @discardableResult
    public func completeMultipartUpload(key: String, uploadId: String,
                                        parts: [CompletedPart]) async throws(ObjectStoreError) -> String {
        try Self.validate(key)
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for part in parts.sorted(by: { $0.number < $1.number }) {
            xml += "<Part><PartNumber>\(part.number)</PartNumber><ETag>\"\(S3XML.escape(Self.unquoted(part.etag)))\"</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let answer = try await send(method: "POST", key: key, query: [("uploadId", uploadId)],
                                    headers: [("content-type", "application/xml")], body: .bytes(Array(xml.utf8)))
        try check(answer, key: key)
        // S3 may answer 200 and put the error in the body.
        if S3XML.first("Code", in: answer.body) != nil, S3XML.first("ETag", in: answer.body) == nil {
            throw Self.error(for: HTTPAnswer(status: 500, headers: [:], body: answer.body), key: key)
        }
        return Self.unquoted(S3XML.first("ETag", in: answer.body) ?? "")
    }

    /// Pages through ListParts (1,000 parts a page, at most 10,000 parts).
    public func listParts(key: String, uploadId: String) async throws(ObjectStoreError) -> [StoredPart]? {
        try Self.validate(key)
        var parts: [StoredPart] = []
        var marker: String?
        for _ in 0..<10 {
            var query = [("uploadId", uploadId)]
            if let marker { query.append(("part-number-marker", marker)) }
            let answer = try await send(method: "GET", key: key, query: query)
            if answer.status == 404 { return nil }
            try check(answer, key: key)
            for entry in S3XML.all("Part", in: answer.body) {
                guard let number = S3XML.first("PartNumber", in: entry).flatMap(Int.init),
                      let size = S3XML.first("Size", in: entry).flatMap(Int64.init) else { continue }
                let modified = S3XML.first("LastModified", in: entry).flatMap(Self.isoDate)
                parts.append(StoredPart(number: number, etag: Self.unquoted(S3XML.first("ETag", in: entry) ?? ""), size: size,
                                        lastModified: modified))
            }
            guard S3XML.first("IsTruncated", in: answer.body) == "true",
                  let next = S3XML.first("NextPartNumberMarker", in: answer.body) else { break }
            marker = next
        }
        return parts.sorted { $0.number < $1.number }
    }

    public func abortMultipartUpload(key: String, uploadId: String) async throws(ObjectStoreError) {
        try Self.validate(key)
        let answer = try await send(method: "DELETE", key: key, query: [("uploadId", uploadId)])
        try check(answer, key: key, accepting: [404])
    }
}

extension S3ObjectStore {
    /// Creates the configured bucket; a bucket that already exists (and is ours) is fine.
    public func createBucket() async throws(ObjectStoreError) {
        let answer = try await send(method: "PUT", key: "")
        if answer.status == 409, S3XML.first("Code", in: answer.body) == "BucketAlreadyOwnedByYou" { return }
        try check(answer, key: nil)
    }
}
