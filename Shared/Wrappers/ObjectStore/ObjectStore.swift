import Foundation
@_exported import protocol HTTPClient.HTTPUploadSource

/// What the store knows about one object.
public struct ObjectInfo: Sendable, Hashable {
    public var key: String
    public var size: Int64
    /// The entity tag without its quotes.
    public var etag: String
    public var lastModified: Date?

    public init(key: String, size: Int64, etag: String, lastModified: Date? = nil) {
        self.key = key
        self.size = size
        self.etag = etag
        self.lastModified = lastModified
    }
}

/// A request a client can send on its own, without credentials: the method, the URL
/// (signature in its query) and the headers it must send exactly as listed.
public struct PresignedRequest: Sendable, Hashable {
    public var method: String
    public var url: String
    public var headers: [String: String]
    public var expiresAt: Date

    public init(method: String, url: String, headers: [String: String], expiresAt: Date) {
        self.method = method
        self.url = url
        self.headers = headers
        self.expiresAt = expiresAt
    }
}

/// One uploaded part of a multipart upload, as `complete` needs it.
/// A part of an unfinished multipart upload, as the store holds it (ListParts).
public struct StoredPart: Sendable, Hashable {
    /// 1-based part number.
    public var number: Int
    /// The entity tag without its quotes.
    public var etag: String
    public var size: Int64
    public var lastModified: Date?

    public init(number: Int, etag: String, size: Int64, lastModified: Date? = nil) {
        self.number = number
        self.etag = etag
        self.size = size
        self.lastModified = lastModified
    }
}

public struct CompletedPart: Sendable, Hashable {
    /// 1-based part number.
    public var number: Int
    public var etag: String

    public init(number: Int, etag: String) {
        self.number = number
        self.etag = etag
    }
}

/// An object store: an S3 bucket in every deployment, a folder in unit tests.
///
/// Keys are `/`-separated paths without a leading slash (`rooms/{roomId}/{versionId}/source.usdz`).
/// Every method may block on the network; implementations run their I/O off the
/// cooperative thread pool.
public protocol ObjectStore: Sendable {
    /// Stores `bytes` under `key`, replacing what was there. Returns the entity tag.
    @discardableResult
    func put(_ bytes: [UInt8], key: String, contentType: String) async throws(ObjectStoreError) -> String
    /// Stores the file at `path` under `key`. Returns the entity tag.
    @discardableResult
    func put(fileAt path: String, key: String, contentType: String) async throws(ObjectStoreError) -> String
    /// Stores exactly `length` bytes read from `source` while they are sent, holding none of
    /// them: an upload relayed as it arrives. A source that aborts (nil) stores nothing.
    @discardableResult
    func put(from source: any HTTPUploadSource, length: Int64, key: String,
             contentType: String) async throws(ObjectStoreError) -> String
    /// Uploads part `partNumber` of a multipart upload, exactly `length` bytes from `source`;
    /// returns the part's entity tag.
    func uploadPart(from source: any HTTPUploadSource, length: Int64, key: String, uploadId: String,
                    partNumber: Int) async throws(ObjectStoreError) -> String
    /// The object's bytes as a stream of chunks.
    func get(_ key: String) -> ObjectByteStream
    /// Writes the object to `path` (replacing it) and returns its size.
    @discardableResult
    func get(_ key: String, toFileAt path: String) async throws(ObjectStoreError) -> Int64
    /// The object's size and tag, or `nil` when there is no such object.
    func head(_ key: String) async throws(ObjectStoreError) -> ObjectInfo?
    /// Removes the object; removing a missing object succeeds.
    func delete(_ key: String) async throws(ObjectStoreError)
    /// Every object whose key starts with `prefix`, in key order.
    func list(prefix: String) async throws(ObjectStoreError) -> [ObjectInfo]

    /// A PUT that stores exactly `contentLength` bytes under `key` until `expiresIn` has passed;
    /// with `contentLength` nil, a body of any size (S3 cannot bound it in a presigned PUT:
    /// check the size the object has before using it).
    func presignPut(key: String, contentLength: Int64?, contentType: String?, expiresIn: Duration) throws(ObjectStoreError) -> PresignedRequest
    /// A GET of `key` valid for `expiresIn`.
    func presignGet(key: String, expiresIn: Duration) throws(ObjectStoreError) -> PresignedRequest

    /// Starts a multipart upload and returns its upload id.
    func createMultipartUpload(key: String, contentType: String) async throws(ObjectStoreError) -> String
    /// A PUT of part `partNumber` (1-based) of exactly `contentLength` bytes.
    func presignUploadPart(key: String, uploadId: String, partNumber: Int, contentLength: Int64,
                           expiresIn: Duration) throws(ObjectStoreError) -> PresignedRequest
    /// Assembles the parts, in order, into the object; returns its entity tag.
    @discardableResult
    func completeMultipartUpload(key: String, uploadId: String, parts: [CompletedPart]) async throws(ObjectStoreError) -> String
    /// The parts an unfinished multipart upload holds, by number; nil when the store knows no
    /// such upload (completed, aborted, or never made).
    func listParts(key: String, uploadId: String) async throws(ObjectStoreError) -> [StoredPart]?
    /// Discards an unfinished multipart upload and its parts; aborting an unknown upload succeeds.
    func abortMultipartUpload(key: String, uploadId: String) async throws(ObjectStoreError)
}

extension ObjectStore {
    /// Reads the whole object into memory (for small objects: manifests, JSON).
    public func getBytes(_ key: String) async throws(ObjectStoreError) -> [UInt8] {
        var bytes: [UInt8] = []
        do {
            for try await chunk in get(key) { bytes += chunk }
        } catch let error as ObjectStoreError {
            throw error
        } catch {
            throw ObjectStoreError(code: .transport, message: "reading the object failed", key: key)
        }
        return bytes
    }

    /// Deletes every object whose key starts with `prefix` (a room's folder when its owner's
    /// account is erased); returns how many. Deleting is idempotent, so a pass interrupted
    /// half-way is simply run again.
    @discardableResult
    public func deleteAll(under prefix: String) async throws(ObjectStoreError) -> Int {
        precondition(prefix.hasSuffix("/") && prefix.count > 1, "deleteAll takes a folder prefix")
        var deleted = 0
        // Bounded: a listing is at most one page; a store that keeps listing deleted keys
        // fails the pass instead of looping.
        for _ in 0..<1_000 {
            let objects = try await list(prefix: prefix)
            if objects.isEmpty { return deleted }
            for object in objects { try await delete(object.key) }
            deleted += objects.count
        }
        throw ObjectStoreError(code: .transport, message: "objects under the prefix keep being listed", key: prefix)
    }
}
