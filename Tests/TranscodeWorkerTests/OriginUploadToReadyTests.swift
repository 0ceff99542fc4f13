import Auth
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import HTTPServer
import Ingest
import Kafka
import ObjectStore
import Postgres
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime
import Testing
@testable import TranscodeWorker

/// Uploads through the one origin until the version is `ready`: ingest with
/// `INGEST_UPLOAD_URLS=origin` serving HTTP on `APP_BASE_URL`, the transcode worker transcoding
/// the real scan from SeaweedFS. One version goes up as the app's raw PUT plus Supabase's
/// `upload_to_signed_url`, another — a 40 MB scan, cut off and resumed — through the resumable
/// endpoint with tuspy.
@Suite("Uploads on the origin end to end: signed and resumable uploads become ready versions", .serialized,
       .enabled(if: Integration.isEnabled), .timeLimit(.minutes(4)))
struct OriginUploadToReadyTests {
    static let clients = Integration.packageRoot.appendingPathComponent("Tests/IngestTests/Clients")

    static func python(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try Integration.run(TokenWitness.python, arguments) })
            }
        }
    }

    @Test("a raw PUT and storage3's upload_to_signed_url through APP_BASE_URL, and a 40 MB scan through /storage/v1/upload/resumable with tuspy, cut off after two chunks and resumed from HEAD's offset, each lead to a ready version")
    func signedAndResumableToReady() async throws {
        try await SeaweedFSFixture.with { s3 in
            let store = S3ObjectStore(configuration: s3)
            try await InProcessBackbone.with(databasePrefix: "origin_ready", secret: FlowAEndToEndTests.secret,
                                             services: ["ingest", "transcode-worker"]) { backbone in
                _ = try await PostgresMigrator(migrations: FlowAEndToEndTests.migrations, logger: .disabled).migrate(try backbone.context("ingest").database)

                let port = Integration.freePort()
                let base = "http://127.0.0.1:\(port)"
                var configuration = IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000)
                configuration.uploadURLs = .origin
                configuration.appBaseURL = base
                let ingest = IngestService(context: try backbone.context("ingest"), configuration: configuration, objects: store).parts()
                backbone.start(ingest)
                let http = HTTPService(name: "ingest", configuration: HTTPServerConfiguration(host: "127.0.0.1", port: port),
                                       router: ingest.router, readiness: [], metrics: try backbone.context("ingest").metrics, logger: .disabled)
                backbone.run { try await http.run() }

                let worker = FlowAEndToEndTests.worker(try backbone.context("transcode-worker"), store: store, workerID: "origin-ready")
                backbone.start(worker)

                let token = JWTCodec(secret: FlowAEndToEndTests.secret).issue(userID: "origin-app", ttl: 3600)
                let fixtures = Integration.packageRoot.appendingPathComponent("Tests/USDTests/Fixtures")
                let usdzPath = fixtures.appendingPathComponent("roomscan.usdz").path
                let jsonPath = fixtures.appendingPathComponent("roomscan.roomplan.json").path
                let usdzBytes = try Data(contentsOf: URL(fileURLWithPath: usdzPath)).count
                let jsonBytes = try Data(contentsOf: URL(fileURLWithPath: jsonPath)).count
                #expect(await Integration.eventually { (try? await PlainHTTP.send("GET", base + "/healthz"))?.status == 200 })

                func function(_ name: String, _ body: [String: Any]) async throws -> [String: Any] {
                    let file = NSTemporaryDirectory() + "origin-ready-\(UInt32.random(in: 0...UInt32.max)).json"
                    try JSONSerialization.data(withJSONObject: body).write(to: URL(fileURLWithPath: file))
                    defer { try? FileManager.default.removeItem(atPath: file) }
                    let answer = try await PlainHTTP.send("POST", base + "/functions/v1/\(name)",
                                                          headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
                                                          file: file)
                    return (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [String: Any] ?? ["raw": answer.body]
                }
                func ready(_ version: String) async -> Bool {
                    await Integration.eventually(timeout: .seconds(90), every: .milliseconds(250)) {
                        let response = await worker.router.respond(to: HTTPRequest(
                            method: .get, path: "/rooms/versions/\(version)", headers: ["Authorization": "Bearer \(token)"]))
                        return (try? ContractCoding.decode(RoomVersionDetails.self, from: response.body))?.status == .ready
                    }
                }
                let initBody: [String: Any] = ["title": "客厅", "tags": ["living room"], "bytes_source": usdzBytes, "bytes_json": jsonBytes]

                // The app's raw PUT of the scan, Supabase's storage client for the JSON.
                let first = try await function("upload-init", initBody)
                let firstVersion = try #require(first["version_id"] as? String, "\(first)")
                #expect(try await PlainHTTP.send("PUT", try #require(first["presigned_usdz"] as? String), file: usdzPath).status == 200)
                let (status, output) = try await Self.python([Self.clients.appendingPathComponent("storage_upload_client.py").path,
                                                              try #require(first["presigned_json"] as? String), jsonPath])
                #expect(status == 0, "\(output)")
                #expect(try await function("upload-complete", ["version_id": firstVersion, "redactions": []])["status"] as? String == "queued")
                #expect(await ready(firstVersion), "the signed upload's version becomes ready")

                // A 40 MB scan through the resumable endpoint (tuspy, 6 MB chunks): the real scan with a
                // stored padding entry (a valid USDZ that transcodes like it), cut off after two chunks
                // and resumed by a new uploader from the offset HEAD reports; the JSON by a raw PUT.
                let largePath = NSTemporaryDirectory() + "origin-ready-\(UInt32.random(in: 0...UInt32.max)).usdz"
                defer { try? FileManager.default.removeItem(atPath: largePath) }
                let pad = """
                    import os, shutil, struct, sys, zipfile
                    source, path, at_least = sys.argv[1], sys.argv[2], int(sys.argv[3])
                    shutil.copyfile(source, path)
                    with zipfile.ZipFile(path, "a") as archive:
                        info = zipfile.ZipInfo("padding.wav", date_time=(2024, 1, 1, 0, 0, 0))
                        info.compress_type = zipfile.ZIP_STORED
                        padding = -(archive.start_dir + 30 + len("padding.wav") + 4) % 64
                        info.extra = struct.pack("<HH", 0x1986, padding) + bytes(padding)
                        archive.writestr(info, bytes(at_least - os.path.getsize(source)))
                    print(os.path.getsize(path))
                    """
                let (padStatus, padOutput) = try await Self.python(["-c", pad, usdzPath, largePath, String(40_000_000)])
                let largeBytes = try #require(Int(padOutput.trimmingCharacters(in: .whitespacesAndNewlines)), "\(padStatus) \(padOutput)")
                #expect(largeBytes >= 40_000_000)
                let second = try await function("upload-init", ["title": "大客厅", "tags": [], "bytes_source": largeBytes, "bytes_json": jsonBytes])
                let secondVersion = try #require(second["version_id"] as? String, "\(second)"), room = try #require(second["room_id"] as? String)
                #expect(second["presigned_usdz"] is String && second["resumable_url"] is String, "\(second)")
                let tus = """
                    import sys
                    from tusclient import client
                    base, token, name, path = sys.argv[1:5]
                    chunk = 6 * 1024 * 1024
                    tus = client.TusClient(base + "/storage/v1/upload/resumable", headers={"Authorization": "Bearer " + token})
                    metadata = {"bucketName": "rooms", "objectName": name, "contentType": "model/vnd.usdz+zip", "cacheControl": "3600"}
                    first = tus.uploader(file_path=path, chunk_size=chunk, metadata=metadata)
                    first.upload(stop_at=2 * chunk)
                    # The phone is stopped; a new uploader asks the server where it stands (HEAD) and goes on.
                    resumed = tus.uploader(file_path=path, chunk_size=chunk, metadata=metadata, url=first.url)
                    print("resumed-from", resumed.get_offset())
                    resumed.upload()
                    print("offset", resumed.offset)
                    """
                let (tusStatus, tusOutput) = try await Self.python(["-c", tus, base, token, "rooms/\(room)/\(secondVersion)/source.usdz",
                                                                    largePath])
                #expect(tusStatus == 0, "\(tusOutput)")
                #expect(tusOutput.contains("resumed-from \(2 * 6 * 1024 * 1024)"), "\(tusOutput)")
                #expect(tusOutput.contains("offset \(largeBytes)"), "\(tusOutput)")
                #expect(try await PlainHTTP.send("PUT", try #require(second["presigned_json"] as? String), file: jsonPath).status == 200)
                #expect(try await function("upload-complete", ["version_id": secondVersion, "redactions": []])["status"] as? String == "queued")
                #expect(await ready(secondVersion), "the resumable upload's version becomes ready")
            }
        }
    }
}
