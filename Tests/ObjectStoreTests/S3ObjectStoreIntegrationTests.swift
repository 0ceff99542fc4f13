import BackboneTestSupport
import Foundation
import Testing
@testable import ObjectStore

/// The S3 store against a real SeaweedFS that checks signatures.
@Suite("S3 object store against SeaweedFS", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(5)))
struct S3ObjectStoreIntegrationTests {
    static func file(_ bytes: Int, fill: UInt8 = 0x5A) -> String {
        let path = NSTemporaryDirectory() + "s3-body-\(UInt32.random(in: 0...UInt32.max))"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: fill, count: bytes)))
        return path
    }

    /// `key size` lines of boto3's list_objects_v2.
    static func boto3List(_ configuration: S3Configuration, prefix: String) async throws -> String {
        try await Boto3Witness.run("""
            page = s3.list_objects_v2(Bucket=bucket, Prefix=sys.argv[1])
            print("\\n".join(f"{o['Key']} {o['Size']}" for o in page.get("Contents", [])))
            """, configuration, arguments: [prefix]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("put, head, get as a stream and to a file, list by prefix, delete")
    func objects() async throws {
        try await SeaweedFSFixture.with { configuration in
            let store = S3ObjectStore(configuration: configuration)
            let bytes = (0..<300_000).map { UInt8($0 % 251) }
            try await store.put(bytes, key: "rooms/r1/v1/roomplan.json", contentType: "application/json")
            let source = Self.file(1_000_000)
            defer { try? FileManager.default.removeItem(atPath: source) }
            try await store.put(fileAt: source, key: "rooms/r1/v1/source.usdz", contentType: "model/vnd.usdz+zip")
            try await store.put([1], key: "rooms/r2/v1/other", contentType: "application/octet-stream")

            #expect(try await store.head("rooms/r1/v1/source.usdz")?.size == 1_000_000)
            #expect(try await store.head("rooms/r1/v1/missing") == nil)
            #expect(try await store.getBytes("rooms/r1/v1/roomplan.json") == bytes)
            let target = NSTemporaryDirectory() + "s3-get-\(UInt32.random(in: 0...UInt32.max))"
            defer { try? FileManager.default.removeItem(atPath: target) }
            #expect(try await store.get("rooms/r1/v1/source.usdz", toFileAt: target) == 1_000_000)
            #expect(try await store.list(prefix: "rooms/r1/").map(\.key) == ["rooms/r1/v1/roomplan.json", "rooms/r1/v1/source.usdz"])
            // An independent client (boto3, from .venv) sees the same objects and sizes.
            let witness = try await Self.boto3List(configuration, prefix: "rooms/r1/")
            #expect(witness == "rooms/r1/v1/roomplan.json 300000\nrooms/r1/v1/source.usdz 1000000")
            try await store.delete("rooms/r1/v1/roomplan.json")
            try await store.delete("rooms/r1/v1/roomplan.json")
            #expect(try await store.head("rooms/r1/v1/roomplan.json") == nil)
            await #expect(throws: ObjectStoreError.self) { try await store.getBytes("rooms/r1/v1/roomplan.json") }
            await #expect(throws: ObjectStoreError.self) { try await store.getBytes("") }
        }
    }

    @Test("the store checks signatures: wrong secret, unsigned, tampered, other size, other key, expired are 403")
    func signaturesAreChecked() async throws {
        try await SeaweedFSFixture.with { configuration in
            let store = S3ObjectStore(configuration: configuration)
            var wrong = configuration
            wrong.secretAccessKey = "not-the-secret-at-all"
            do {
                try await S3ObjectStore(configuration: wrong).put([1], key: "x", contentType: "text/plain")
                Issue.record("a wrong secret was accepted")
            } catch let error as ObjectStoreError {
                #expect(error.code == .forbidden)
                #expect(!error.isRetriable)
                #expect(!error.description.contains(configuration.secretAccessKey))
            }

            let body = Self.file(1024)
            let bigger = Self.file(1025)
            defer { for path in [body, bigger] { try? FileManager.default.removeItem(atPath: path) } }
            let key = "rooms/r1/v1/source.usdz"
            let put = try store.presignPut(key: key, contentLength: 1024, contentType: nil, expiresIn: .seconds(900))

            let unsigned = try await PlainHTTP.send("PUT", "\(configuration.endpoint)/\(configuration.bucket)/\(key)", file: body)
            #expect(unsigned.status == 403)
            let last = put.url.last == "0" ? "1" : "0"
            let tampered = try await PlainHTTP.send("PUT", String(put.url.dropLast()) + last, headers: put.headers, file: body)
            #expect(tampered.status == 403)
            let otherSize = try await PlainHTTP.send("PUT", put.url, file: bigger)
            #expect(otherSize.status == 403)
            let otherKey = try await PlainHTTP.send("PUT", put.url.replacingOccurrences(of: "source.usdz", with: "other.usdz"),
                                                    headers: put.headers, file: body)
            #expect(otherKey.status == 403)
            #expect(try await store.head(key) == nil)
            #expect(try await store.head("rooms/r1/v1/other.usdz") == nil)

            let good = try await PlainHTTP.send("PUT", put.url, headers: put.headers, file: body)
            #expect(good.status == 200)
            #expect(try await store.head(key)?.size == 1024)
            let get = try store.presignGet(key: key, expiresIn: .seconds(60))
            #expect(try await PlainHTTP.send("GET", get.url).body.utf8.count == 1024)

            let shortLived = try store.presignPut(key: "rooms/r1/v1/late", contentLength: 1024, contentType: nil,
                                                  expiresIn: .seconds(1))
            try await Task.sleep(for: .seconds(2.5))
            let expired = try await PlainHTTP.send("PUT", shortLived.url, headers: shortLived.headers, file: body)
            #expect(expired.status == 403)
            #expect(try await store.head("rooms/r1/v1/late") == nil)
        }
    }

    @Test("multipart: 40 MB in eight presigned 5 MB parts, completed with their ETags")
    func multipart() async throws {
        try await SeaweedFSFixture.with { configuration in
            let store = S3ObjectStore(configuration: configuration)
            let key = "rooms/r9/v9/source.usdz"
            let partSize = 5 * 1024 * 1024
            let uploadId = try await store.createMultipartUpload(key: key, contentType: "model/vnd.usdz+zip")
            var parts: [CompletedPart] = []
            for number in 1...8 {
                let path = Self.file(partSize, fill: UInt8(number))
                defer { try? FileManager.default.removeItem(atPath: path) }
                let request = try store.presignUploadPart(key: key, uploadId: uploadId, partNumber: number,
                                                          contentLength: Int64(partSize), expiresIn: .seconds(900))
                let answer = try await PlainHTTP.send("PUT", request.url, headers: request.headers, file: path)
                #expect(answer.status == 200, "part \(number): \(answer.body)")
                parts.append(CompletedPart(number: number, etag: answer.headers["etag"] ?? ""))
            }
            #expect(try await store.head(key) == nil)
            // What a relaunched app or the server's completion asks the store: every part, its tag and size.
            let stored = try #require(try await store.listParts(key: key, uploadId: uploadId))
            #expect(stored.map(\.number) == Array(1...8) && stored.allSatisfy { $0.size == Int64(partSize) })
            #expect(stored.map(\.etag) == parts.map { S3ObjectStore.unquoted($0.etag) })
            #expect(stored.allSatisfy { abs(($0.lastModified ?? .distantPast).timeIntervalSinceNow) < 300 })
            try await store.completeMultipartUpload(key: key, uploadId: uploadId, parts: parts)
            #expect(try await store.listParts(key: key, uploadId: uploadId) == nil, "a completed upload has no parts left")
            #expect(try await store.head(key)?.size == Int64(8 * partSize))
            let target = NSTemporaryDirectory() + "s3-mp-\(UInt32.random(in: 0...UInt32.max))"
            defer { try? FileManager.default.removeItem(atPath: target) }
            try await store.get(key, toFileAt: target)
            let data = try #require(FileManager.default.contents(atPath: target))
            #expect(data[0] == 1 && data[partSize] == 2 && data[data.count - 1] == 8)

            let abandoned = try await store.createMultipartUpload(key: "rooms/r9/v9/abandoned", contentType: "x/y")
            try await store.abortMultipartUpload(key: "rooms/r9/v9/abandoned", uploadId: abandoned)
            await #expect(throws: ObjectStoreError.self) {
                try await store.completeMultipartUpload(key: "rooms/r9/v9/abandoned", uploadId: abandoned, parts: parts)
            }
        }
    }
}
