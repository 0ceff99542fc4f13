import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import Ingest
import ObjectStore
import Postgres
import ServiceLogging
import ServiceRuntime
import Testing

/// Storage's signed upload on the one origin (`INGEST_UPLOAD_URLS=origin`): upload-init's
/// `presigned_usdz` and `presigned_json` are `{APP_BASE_URL}/storage/v1/object/upload/sign/rooms/…`,
/// served by ingest over loopback HTTP, relayed to a real SeaweedFS; the phone is `curl`, a raw
/// socket, and Supabase's own storage client (storage3).
@Suite("Signed uploads on the origin: a raw PUT and storage3's upload_to_signed_url, exact sizes, STORAGE_FORBIDDEN", .serialized,
       .enabled(if: Integration.isEnabled), .timeLimit(.minutes(5)))
struct SignedUploadTests {
    typealias Uploads = RoomUploadIntegrationTests
    typealias Functions = EdgeFunctionTests

    /// Ingest over HTTP on a port chosen first, so that APP_BASE_URL names it.
    static func withOrigin(_ body: (IngestHarness, S3ObjectStore, String) async throws -> Void) async throws {
        try await SeaweedFSFixture.with { s3 in
            let store = S3ObjectStore(configuration: s3)
            // The port is chosen once the store listens on its own (it picks free ports too).
            let port = Integration.freePort()
            var configuration = IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000)
            configuration.uploadURLs = .origin
            configuration.appBaseURL = "http://127.0.0.1:\(port)"
            try await IngestHarness.with(configuration: configuration, objects: store) { harness in
                _ = try await harness.startHTTP(port: port)
                try await body(harness, store, "http://127.0.0.1:\(port)")
            }
        }
    }

    /// The JSON object a witness printed last (warnings may come before it).
    static func lastJSON(_ output: String) -> [String: Any] {
        let line = output.split(separator: "\n").last.map(String.init) ?? ""
        return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
    }

    static func python(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try Integration.run(TokenWitness.python, arguments) })
            }
        }
    }

    @Test("upload-init's URLs are on APP_BASE_URL; a raw PUT of the scan (as URLSession sends it) and storage3's upload_to_signed_url of the JSON store exactly the bytes sent, answer {Key, Id}, and upload-complete queues the version")
    func rawPutAndStorageClient() async throws {
        try await Self.withOrigin { harness, store, base in
            let token = harness.userToken("origin-owner")
            let answer = Functions.object(try await Functions.call(harness, "upload-init", token: token, Functions.initBody))
            let usdzURL = try #require(answer["presigned_usdz"] as? String), jsonURL = try #require(answer["presigned_json"] as? String)
            let room = try #require(answer["room_id"] as? String), version = try #require(answer["version_id"] as? String)
            #expect(usdzURL.hasPrefix("\(base)/storage/v1/object/upload/sign/rooms/rooms/\(room)/\(version)/source.usdz?token="))
            #expect(jsonURL.hasPrefix("\(base)/storage/v1/object/upload/sign/rooms/rooms/\(room)/\(version)/roomplan.json?token="))

            let usdz = Uploads.file(2000, fill: 0x55), json = Uploads.file(300, fill: 0x7B)
            defer { for path in [usdz, json] { try? FileManager.default.removeItem(atPath: path) } }
            let put = try await PlainHTTP.send("PUT", usdzURL, file: usdz)
            #expect(put.status == 200, "\(put.body)")
            let stored = (try? JSONSerialization.jsonObject(with: Data(put.body.utf8))) as? [String: Any] ?? [:]
            #expect(stored["Key"] as? String == "rooms/rooms/\(room)/\(version)/source.usdz" && stored["Id"] is String)

            let script = Functions.clients.appendingPathComponent("storage_upload_client.py").path
            let (status, output) = try await Self.python([script, jsonURL, json])
            #expect(status == 0, "\(output)")
            let seen = Self.lastJSON(output)
            #expect(seen["full_path"] as? String == "rooms/rooms/\(room)/\(version)/roomplan.json", "\(output)")

            #expect(try await store.getBytes("rooms/\(room)/\(version)/source.usdz") == [UInt8](repeating: 0x55, count: 2000))
            #expect(try await store.getBytes("rooms/\(room)/\(version)/roomplan.json") == [UInt8](repeating: 0x7B, count: 300))
            let done = try await Functions.call(harness, "upload-complete", token: token, ["version_id": version, "redactions": []])
            #expect(done.status == .accepted && Functions.object(done)["status"] as? String == "queued")
            #expect(try harness.readTopic(harness.configuration.roomTranscodeTopic, expecting: 1).count == 1)
        }
    }

    @Test("a forged token, another object's token, or a version no longer uploading: 403 STORAGE_FORBIDDEN in the project's shape with Storage's statusCode and message (storage3 raises StorageApiError 403); nothing stored")
    func forbidden() async throws {
        try await Self.withOrigin { harness, store, _ in
            let token = harness.userToken("origin-forbidden")
            let answer = Functions.object(try await Functions.call(harness, "upload-init", token: token, Functions.initBody))
            let usdzURL = try #require(answer["presigned_usdz"] as? String), jsonURL = try #require(answer["presigned_json"] as? String)
            let usdzKey = try #require(usdzURL.split(separator: "?").first.map { String($0.split(separator: "/sign/rooms/")[1]) })
            let json = Uploads.file(300, fill: 0x7B), usdz = Uploads.file(2000)
            defer { for path in [usdz, json] { try? FileManager.default.removeItem(atPath: path) } }

            // A token whose signature is changed, and the JSON's token on the scan's path.
            let forgedURL = String(usdzURL.dropLast(3)) + (usdzURL.hasSuffix("AAA") ? "BBB" : "AAA")
            let jsonToken = try #require(jsonURL.split(separator: "token=").last)
            let otherObject = String(usdzURL.split(separator: "?")[0]) + "?token=" + jsonToken
            for url in [forgedURL, otherObject] {
                let refused = try await PlainHTTP.send("PUT", url, file: usdz)
                #expect(refused.status == 403, "\(refused.body)")
                let body = (try? JSONSerialization.jsonObject(with: Data(refused.body.utf8))) as? [String: Any] ?? [:]
                #expect((body["error"] as? [String: Any])?["code"] as? String == "STORAGE_FORBIDDEN")
                #expect(body["statusCode"] as? String == "403" && body["message"] is String)
            }
            #expect(try await store.head(usdzKey) == nil)

            let script = Functions.clients.appendingPathComponent("storage_upload_client.py").path
            let forgedJSON = String(jsonURL.dropLast(3)) + (jsonURL.hasSuffix("AAA") ? "BBB" : "AAA")
            let (status, output) = try await Self.python([script, jsonURL, json, forgedJSON])
            #expect(status == 0, "\(output)")
            let seen = Self.lastJSON(output)
            #expect(seen["forged_status"] as? String == "403" && seen["forged_code"] as? String == "STORAGE_FORBIDDEN", "\(output)")

            // Completed: the URLs no longer admit anything (the scan cannot be replaced under the worker).
            #expect(try await PlainHTTP.send("PUT", usdzURL, file: usdz).status == 200)
            let version = try #require(answer["version_id"] as? String)
            #expect(try await Functions.call(harness, "upload-complete", token: token, ["version_id": version]).status == .accepted)
            let late = try await PlainHTTP.send("PUT", usdzURL, file: usdz)
            #expect(late.status == 403 && late.body.contains("STORAGE_FORBIDDEN"))
        }
    }

    @Test("exact sizes: a body shorter or longer than the token's size is refused and nothing is stored — declared (Content-Length), chunked, or cut off mid-body by the client")
    func exactSizes() async throws {
        try await Self.withOrigin { harness, store, base in
            let token = harness.userToken("origin-sizes")
            let answer = Functions.object(try await Functions.call(harness, "upload-init", token: token, Functions.initBody))
            let usdzURL = try #require(answer["presigned_usdz"] as? String)
            let usdzKey = try #require(usdzURL.split(separator: "?").first.map { String($0.split(separator: "/sign/rooms/")[1]) })
            let short = Uploads.file(1999), long = Uploads.file(2001)
            defer { for path in [short, long] { try? FileManager.default.removeItem(atPath: path) } }

            for file in [short, long] {
                let declared = try await PlainHTTP.send("PUT", usdzURL, file: file)
                #expect(declared.status == 400 && declared.body.contains("INVALID_FIELD"), "\(declared.body)")
                let chunked = try await PlainHTTP.send("PUT", usdzURL, headers: ["Transfer-Encoding": "chunked"], file: file)
                #expect(chunked.status == 400 && chunked.body.contains("nothing stored"), "\(chunked.body)")
            }
            #expect(try await store.head(usdzKey) == nil)

            // The client declares 2000 bytes, sends 1000 and goes away.
            let path = String(usdzURL.dropFirst(base.count))
            let cut = """
                import socket, sys, time
                s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
                s.sendall(("PUT " + sys.argv[2] + " HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 2000\\r\\n\\r\\n").encode() + b"A" * 1000)
                time.sleep(0.5)
                s.close()
                """
            let port = try #require(URLComponents(string: base)?.port)
            let (status, output) = try await Self.python(["-c", cut, String(port), path])
            #expect(status == 0, "\(output)")
            try await Task.sleep(for: .seconds(1))
            #expect(try await store.head(usdzKey) == nil)

            // The right size still goes through afterwards.
            let exact = Uploads.file(2000)
            defer { try? FileManager.default.removeItem(atPath: exact) }
            #expect(try await PlainHTTP.send("PUT", usdzURL, file: exact).status == 200)
            #expect(try await store.head(usdzKey)?.size == 2000)
        }
    }
}

@Suite("Resumable uploads on the origin: tus 1.0.0 as Supabase's clients speak it", .serialized,
       .enabled(if: Integration.isEnabled), .timeLimit(.minutes(5)))
struct ResumableUploadTests {
    typealias Functions = EdgeFunctionTests

    /// upload-init (Edge Functions) for a scan of `bytes` as `token`'s user: the answer, the
    /// version it minted and the object key of its source.
    static func initScan(_ harness: IngestHarness, token: String,
                         bytes: Int) async throws -> (answer: [String: Any], version: String, key: String) {
        var body = Functions.initBody
        body["bytes_source"] = bytes
        let answer = Functions.object(try await Functions.call(harness, "upload-init", token: token, body))
        let room = try #require(answer["room_id"] as? String), version = try #require(answer["version_id"] as? String)
        return (answer, version, "rooms/\(room)/\(version)/source.usdz")
    }

    @Test("a 40 MB scan goes up through /storage/v1/upload/resumable with tuspy in 6 MB chunks, two chunks, a third cut off, resumed from HEAD's offset; the store holds exactly the file and upload-complete queues the version; another user cannot create an upload for that object")
    func fortyMegabytesResumed() async throws {
        try await SignedUploadTests.withOrigin { harness, store, base in
            let token = harness.userToken("tus-owner")
            let (answer, version, key) = try await Self.initScan(harness, token: token, bytes: 40 << 20)
            #expect(answer["resumable_url"] as? String == "\(base)/storage/v1/upload/resumable")
            #expect(answer["presigned_usdz"] is String && answer["presigned_usdz_parts"] is [Any])

            var bytes = [UInt8](repeating: 0, count: 40 << 20)
            var generator = SplitMix64(state: 41)
            for i in stride(from: 0, to: bytes.count, by: 8) {
                let value = generator.next()
                for j in 0..<8 { bytes[i + j] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(j))) }
            }
            let file = NSTemporaryDirectory() + "tus-\(UInt32.random(in: 0...UInt32.max))"
            #expect(FileManager.default.createFile(atPath: file, contents: Data(bytes)))
            defer { try? FileManager.default.removeItem(atPath: file) }

            let script = Functions.clients.appendingPathComponent("tus_client.py").path
            let (status, output) = try await SignedUploadTests.python([script, base, token, key, file, harness.userToken("tus-stranger")])
            #expect(status == 0, "\(output)")
            let seen = SignedUploadTests.lastJSON(output)
            #expect(seen["after_two_chunks"] as? Int == 12 << 20, "\(output)")
            #expect(seen["location_on_origin"] as? Bool == true)
            #expect(seen["resumed_from"] as? Int == 12 << 20)
            #expect(seen["final_offset"] as? Int == 40 << 20)
            #expect(seen["stranger_status"] as? Int == 403 && (seen["stranger_body"] as? String)?.contains("STORAGE_FORBIDDEN") == true)

            #expect(try await store.head(key)?.size == Int64(40 << 20))
            #expect(try await store.getBytes(key) == bytes)
            let json = RoomUploadIntegrationTests.file(300, fill: 0x7B)
            defer { try? FileManager.default.removeItem(atPath: json) }
            #expect(try await PlainHTTP.send("PUT", try #require(answer["presigned_json"] as? String), file: json).status == 200)
            let done = try await Functions.call(harness, "upload-complete", token: token, ["version_id": version, "redactions": []])
            #expect(done.status == .accepted && Functions.object(done)["status"] as? String == "queued",
                    "\(String(decoding: done.body, as: UTF8.self))")
        }
    }

    @Test("a version abandoned with a resumable upload half done: the sweep aborts the store's multipart upload behind it and forgets the upload")
    func abandonedResumableUploadIsSwept() async throws {
        try await SignedUploadTests.withOrigin { harness, store, base in
            let token = harness.userToken("tus-quitter")
            let (_, version, key) = try await Self.initScan(harness, token: token, bytes: 12 << 20)
            let file = NSTemporaryDirectory() + "tus-quit-\(UInt32.random(in: 0...UInt32.max))"
            #expect(FileManager.default.createFile(atPath: file, contents: Data(repeating: 0x55, count: 12 << 20)))
            defer { try? FileManager.default.removeItem(atPath: file) }
            // One 6 MB chunk, then the phone never comes back.
            let (status, output) = try await SignedUploadTests.python(["-c", """
                import sys
                from tusclient import client
                tus = client.TusClient(sys.argv[1] + "/storage/v1/upload/resumable", headers={"Authorization": "Bearer " + sys.argv[2]})
                uploader = tus.uploader(file_path=sys.argv[4], chunk_size=6 * 1024 * 1024, metadata={
                    "bucketName": "rooms", "objectName": sys.argv[3], "contentType": "model/vnd.usdz+zip", "cacheControl": "3600"})
                uploader.upload(stop_at=6 * 1024 * 1024)
                print(uploader.offset)
                """, base, token, key, file])
            #expect(status == 0 && output.contains(String(6 << 20)), "\(output)")
            let storeUpload = try #require(try await harness.context.database.query(
                "SELECT store_upload_id FROM storage_resumable_uploads WHERE version_id = $1", [version]).first?
                .decode(String.self, "store_upload_id"))
            let parts = """
                try:
                    print(len(s3.list_parts(Bucket=bucket, Key=sys.argv[1], UploadId=sys.argv[2]).get("Parts", [])))
                except s3.exceptions.NoSuchUpload:
                    print("no such upload")
                """
            #expect(try await Boto3Witness.run(parts, store.configuration, arguments: [key, storeUpload])
                .trimmingCharacters(in: .whitespacesAndNewlines) == "1")

            let sweeper = RoomUploadSweeper(uploads: RoomUploadStore(database: harness.context.database), objects: store, logger: .disabled)
            #expect(try await sweeper.sweepOnce(now: Date().addingTimeInterval(2 * 86_400)) == 1)
            #expect(try await Boto3Witness.run(parts, store.configuration, arguments: [key, storeUpload])
                .trimmingCharacters(in: .whitespacesAndNewlines) == "no such upload")
            #expect(try await harness.context.database.query(
                "SELECT 1 FROM storage_resumable_uploads WHERE version_id = $1", [version]).isEmpty)
        }
    }
}
