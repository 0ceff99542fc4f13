import Foundation
import Hashing
import Lifecycle
import ObjectStore
import Synchronization

/// An `ObjectStore` in a local folder, for unit tests (test support only, never shipped): objects are files under `root`,
/// multipart uploads are folders of parts. Presigned requests carry `file://` URLs and are
/// not enforced; use the S3 store to test signatures.
public final class FileSystemObjectStore: ObjectStore {
    public let root: URL
    /// Serialises file operations so that concurrent tests see whole files.
    private let lock = Mutex(())

    public init(root: URL) throws(ObjectStoreError) {
        self.root = root
        do {
            try FileManager.default.createDirectory(at: root.appendingPathComponent("objects"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: root.appendingPathComponent("uploads"), withIntermediateDirectories: true)
        } catch {
            throw ObjectStoreError(code: .file, message: "cannot create \(root.path)")
        }
    }

    private func objectURL(_ key: String) throws(ObjectStoreError) -> URL {
        guard !key.isEmpty, !key.hasPrefix("/"), !key.split(separator: "/").contains("..") else {
            throw ObjectStoreError(code: .invalidArgument, message: "invalid key", key: key)
        }
        return root.appendingPathComponent("objects").appendingPathComponent(key)
    }

    private func uploadURL(_ uploadId: String) throws(ObjectStoreError) -> URL {
        guard !uploadId.isEmpty, uploadId.allSatisfy({ $0.isHexDigit }) else {
            throw ObjectStoreError(code: .notFound, message: "no such upload", storeCode: "NoSuchUpload")
        }
        return root.appendingPathComponent("uploads").appendingPathComponent(uploadId)
    }

    private static func etag(_ bytes: [UInt8]) -> String { Digest.hex(Array(Digest.sha256(bytes).prefix(16))) }

    private func write(_ bytes: [UInt8], to url: URL, key: String) throws(ObjectStoreError) {
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: url, options: .atomic)
        } catch {
            throw ObjectStoreError(code: .file, message: "cannot write the object", key: key)
        }
    }

    private func read(_ url: URL, key: String) throws(ObjectStoreError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw ObjectStoreError(code: .notFound, message: "no such object", key: key, status: 404, storeCode: "NoSuchKey")
        }
        return [UInt8](data)
    }

    @discardableResult
    public func put(_ bytes: [UInt8], key: String, contentType: String) async throws(ObjectStoreError) -> String {
        let url = try objectURL(key)
        try lock.withLock { _ throws(ObjectStoreError) in try write(bytes, to: url, key: key) }
        return Self.etag(bytes)
    }

    @discardableResult
    public func put(fileAt path: String, key: String, contentType: String) async throws(ObjectStoreError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ObjectStoreError(code: .file, message: "cannot read \(path)", key: key)
        }
        return try await put([UInt8](data), key: key, contentType: contentType)
    }

    /// Reads the source on the caller's thread (this store is for unit tests).
    @discardableResult
    public func put(from source: any HTTPUploadSource, length: Int64, key: String,
                    contentType: String) async throws(ObjectStoreError) -> String {
        try await put(try Self.drain(source, length: length, key: key), key: key, contentType: contentType)
    }

    public func uploadPart(from source: any HTTPUploadSource, length: Int64, key: String, uploadId: String,
                           partNumber: Int) async throws(ObjectStoreError) -> String {
        try await put(try Self.drain(source, length: length, key: key), key: "\(key).parts/\(uploadId)/\(partNumber)",
                      contentType: "application/octet-stream")
    }

    private static func drain(_ source: any HTTPUploadSource, length: Int64, key: String) throws(ObjectStoreError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Int(length))
        var filled = 0
        while filled < bytes.count {
            let n = bytes.withUnsafeMutableBytes { source.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...])) }
            guard let n, n > 0 else {
                throw ObjectStoreError(code: .transport, message: "the upload ended before \(length) bytes", key: key)
            }
            filled += n
        }
        return bytes
    }

    public func get(_ key: String) -> ObjectByteStream {
        let (stream, continuation) = ObjectByteStream.make()
        do {
            let url = try objectURL(key)
            let bytes = try lock.withLock { _ throws(ObjectStoreError) in try read(url, key: key) }
            var offset = 0
            while offset < bytes.count {
                continuation.yield(Array(bytes[offset..<min(offset + 65_536, bytes.count)]))
                offset += 65_536
            }
            continuation.finish()
        } catch {
            continuation.finish(throwing: error)
        }
        return stream
    }

    @discardableResult
    public func get(_ key: String, toFileAt path: String) async throws(ObjectStoreError) -> Int64 {
        let url = try objectURL(key)
        let bytes = try lock.withLock { _ throws(ObjectStoreError) in try read(url, key: key) }
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw ObjectStoreError(code: .file, message: "cannot write \(path)", key: key)
        }
        return Int64(bytes.count)
    }

    public func head(_ key: String) async throws(ObjectStoreError) -> ObjectInfo? {
        let url = try objectURL(key)
        return lock.withLock { _ in
            guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
            return ObjectInfo(key: key, size: Int64(data.count), etag: Self.etag([UInt8](data)))
        }
    }

    public func delete(_ key: String) async throws(ObjectStoreError) {
        let url = try objectURL(key)
        lock.withLock { _ in _ = try? FileManager.default.removeItem(at: url) }
    }

    public func list(prefix: String) async throws(ObjectStoreError) -> [ObjectInfo] {
        let base = root.appendingPathComponent("objects")
        return lock.withLock { _ in
            guard let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else { return [] }
            var found: [ObjectInfo] = []
            let basePath = base.standardizedFileURL.path + "/"
            for case let url as URL in walker {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue,
                      let data = FileManager.default.contents(atPath: url.path) else { continue }
                let key = String(url.standardizedFileURL.path.dropFirst(basePath.count))
                if key.hasPrefix(prefix) {
                    found.append(ObjectInfo(key: key, size: Int64(data.count), etag: Self.etag([UInt8](data))))
                }
            }
            return found.sorted { $0.key < $1.key }
        }
    }

    private func fileRequest(_ method: String, _ path: String, _ headers: [String: String],
                             _ expiresIn: Duration) -> PresignedRequest {
        PresignedRequest(method: method, url: root.appendingPathComponent(path).absoluteString, headers: headers,
                         expiresAt: Date().addingTimeInterval(TimeInterval(expiresIn.wholeSeconds)))
    }

    public func presignPut(key: String, contentLength: Int64?, contentType: String?,
                           expiresIn: Duration) throws(ObjectStoreError) -> PresignedRequest {
        var headers: [String: String] = [:]
        if let contentLength { headers["Content-Length"] = String(contentLength) }
        if let contentType { headers["Content-Type"] = contentType }
        return fileRequest("PUT", "objects/\(key)", headers, expiresIn)
    }

    public func presignGet(key: String, expiresIn: Duration) throws(ObjectStoreError) -> PresignedRequest {
        fileRequest("GET", "objects/\(key)", [:], expiresIn)
    }

    public func createMultipartUpload(key: String, contentType: String) async throws(ObjectStoreError) -> String {
        _ = try objectURL(key)
        let id = Digest.hex(Digest.randomBytes(16))
        let url = try uploadURL(id)
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            throw ObjectStoreError(code: .file, message: "cannot create the upload", key: key)
        }
        return id
    }

    public func presignUploadPart(key: String, uploadId: String, partNumber: Int, contentLength: Int64,
                                  expiresIn: Duration) throws(ObjectStoreError) -> PresignedRequest {
        fileRequest("PUT", "uploads/\(uploadId)/\(partNumber)", ["Content-Length": String(contentLength)], expiresIn)
    }

    /// Stores one part, as a client's PUT to `presignUploadPart`'s URL would; returns its tag.
    @discardableResult
    public func uploadPart(_ bytes: [UInt8], uploadId: String, partNumber: Int) throws(ObjectStoreError) -> String {
        let url = try uploadURL(uploadId).appendingPathComponent(String(partNumber))
        try lock.withLock { _ throws(ObjectStoreError) in try write(bytes, to: url, key: "part \(partNumber)") }
        return Self.etag(bytes)
    }

    @discardableResult
    public func completeMultipartUpload(key: String, uploadId: String,
                                        parts: [CompletedPart]) async throws(ObjectStoreError) -> String {
        let folder = try uploadURL(uploadId)
        var bytes: [UInt8] = []
        for part in parts.sorted(by: { $0.number < $1.number }) {
            let data = try lock.withLock { _ throws(ObjectStoreError) in
                try read(folder.appendingPathComponent(String(part.number)), key: key)
            }
            guard Self.etag(data) == S3ObjectStore.unquoted(part.etag) else {
                throw ObjectStoreError(code: .rejected, message: "part \(part.number) has another tag", key: key,
                                       status: 400, storeCode: "InvalidPart")
            }
            bytes += data
        }
        let etag = try await put(bytes, key: key, contentType: "application/octet-stream")
        try? FileManager.default.removeItem(at: folder)
        return etag
    }

    public func listParts(key: String, uploadId: String) async throws(ObjectStoreError) -> [StoredPart]? {
        let folder = try uploadURL(uploadId)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return nil }
        return try names.compactMap(Int.init).sorted().map { number throws(ObjectStoreError) in
            let url = folder.appendingPathComponent(String(number))
            let data = try lock.withLock { _ throws(ObjectStoreError) in try read(url, key: key) }
            let modified = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date
            return StoredPart(number: number, etag: Self.etag(data), size: Int64(data.count), lastModified: modified)
        }
    }

    public func abortMultipartUpload(key: String, uploadId: String) async throws(ObjectStoreError) {
        let folder = try uploadURL(uploadId)
        try? FileManager.default.removeItem(at: folder)
    }
}
