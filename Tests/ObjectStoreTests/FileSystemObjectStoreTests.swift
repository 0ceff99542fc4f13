import BackboneTestSupport
import Foundation
import ServiceRuntime
import Settings
import Testing
@testable import ObjectStore

@Suite("File-system object store")
struct FileSystemObjectStoreTests {
    func makeStore() throws -> FileSystemObjectStore {
        try FileSystemObjectStore(root: FileManager.default.temporaryDirectory.appendingPathComponent("os-\(UUID().uuidString)"))
    }

    @Test("put, head, get, list by prefix and delete")
    func roundTrip() async throws {
        let store = try makeStore()
        try await store.put(Array("hello".utf8), key: "rooms/a/1.txt", contentType: "text/plain")
        try await store.put(Array("x".utf8), key: "rooms/b/2.txt", contentType: "text/plain")
        #expect(try await store.head("rooms/a/1.txt")?.size == 5)
        #expect(try await store.head("rooms/none") == nil)
        #expect(try await store.getBytes("rooms/a/1.txt") == Array("hello".utf8))
        #expect(try await store.list(prefix: "rooms/a/").map(\.key) == ["rooms/a/1.txt"])
        try await store.delete("rooms/a/1.txt")
        #expect(try await store.head("rooms/a/1.txt") == nil)
        await #expect(throws: ObjectStoreError.self) { try await store.getBytes("rooms/a/1.txt") }
    }

    @Test("multipart: parts assembled in order; a wrong tag is refused")
    func multipart() async throws {
        let store = try makeStore()
        let id = try await store.createMultipartUpload(key: "big", contentType: "model/vnd.usdz+zip")
        let tag2 = try store.uploadPart([4, 5], uploadId: id, partNumber: 2)
        let tag1 = try store.uploadPart([1, 2, 3], uploadId: id, partNumber: 1)
        await #expect(throws: ObjectStoreError.self) {
            try await store.completeMultipartUpload(key: "big", uploadId: id,
                                                    parts: [CompletedPart(number: 1, etag: tag2), CompletedPart(number: 2, etag: tag1)])
        }
        try await store.completeMultipartUpload(key: "big", uploadId: id,
                                                parts: [CompletedPart(number: 2, etag: tag2), CompletedPart(number: 1, etag: tag1)])
        #expect(try await store.getBytes("big") == [1, 2, 3, 4, 5])
    }

    @Test("configuration: every missing S3 key reported at once")
    func configuration() {
        var reader = EnvironmentReader(["S3_ENDPOINT": "ftp://x"])
        _ = S3Configuration.read(from: &reader)
        #expect(reader.problems.count == 4)
        var good = EnvironmentReader(["S3_ENDPOINT": "http://127.0.0.1:8333/", "S3_BUCKET": "b", "S3_ACCESS_KEY_ID": "k",
                                      "S3_SECRET_ACCESS_KEY": "s"])
        let config = S3Configuration.read(from: &good)
        #expect(good.problems.isEmpty)
        #expect(config.publicEndpoint == "http://127.0.0.1:8333")
        #expect(config.region == "us-east-1")
    }
}
