import Auth
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import Hashing
import Ingest
import Kafka
import Lifecycle
import ObjectStore
import Postgres
import PrometheusMetrics
import RealtimeNotifier
import ServiceLogging
import ServiceRuntime
import Synchronization
import Testing
@testable import TranscodeWorker

/// Flow A as the app lives it: upload-init at ingest, both files PUT straight to the store,
/// upload-complete, the worker transcodes the real scan, and the room screen — the Python
/// `realtime` client on `room:{roomId}` — sees the progress and then `ready`; the catch-up
/// query agrees. Ingest, worker and notifier run in this process on one cluster and one database.
@Suite("Flow A end to end: ingest → transcode worker → realtime notifier", .serialized, .enabled(if: Integration.isEnabled),
       .timeLimit(.minutes(4)))
struct FlowAEndToEndTests {
    static let secret = "flow-a-secret-0123456789abcdef"

    /// The migrations of the three services, one per version (as `backbone migrate` applies them).
    static var migrations: [PostgresMigration] {
        var byVersion: [Int: PostgresMigration] = [:]
        for migration in IngestService.migrations + TranscodeWorkerService.migrations + RealtimeNotifierService.migrations {
            byVersion[migration.version] = migration
        }
        return byVersion.values.sorted { $0.version < $1.version }
    }

    /// The transcode worker as the end-to-end runs have it: the real pipeline over `store`,
    /// polling every 100 ms, its outbox relayed every 200 ms.
    static func worker(_ context: ServiceContext, store: S3ObjectStore, workerID: String) -> ServiceParts {
        var settings = TranscodeConfiguration()
        settings.pollInterval = .milliseconds(100)
        settings.outboxInterval = .milliseconds(200)
        return TranscodeWorkerService(
            context: context, configuration: settings,
            pipeline: StoreTranscodePipeline(store: store, converter: RoomScanConverter(), workDirectory: NSTemporaryDirectory(),
                                             maxJobBytes: 64 << 20),
            links: StoreOutputLinks(store: store, ttl: .seconds(300)), workerID: workerID).parts()
    }

    @Test("upload-init, PUT, upload-complete: the room's client sees transcode_progress then ready, and the catch-up query agrees")
    func uploadToReady() async throws {
        try await SeaweedFSFixture.with { s3 in
            let store = S3ObjectStore(configuration: s3)
            try await InProcessBackbone.with(databasePrefix: "flow_a", secret: Self.secret,
                                             services: ["ingest", "transcode-worker", "realtime-notifier"]) { backbone in
                _ = try await PostgresMigrator(migrations: Self.migrations, logger: .disabled).migrate(try backbone.context("ingest").database)

                let ingest = IngestService(context: try backbone.context("ingest"),
                                           configuration: IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000),
                                           objects: store).parts()
                backbone.start(ingest)

                let worker = Self.worker(try backbone.context("transcode-worker"), store: store, workerID: "flow-a")

                var notifier = RealtimeNotifierService(
                    context: try backbone.context("realtime-notifier"),
                    configuration: RealtimeConfiguration(maxBatchWait: .milliseconds(5), maintenanceInterval: .seconds(1),
                                                         instanceID: "flow-a"))
                let port = Mutex<Int?>(nil)
                notifier.onListening = { bound in port.withLock { $0 = bound } }
                let notifierParts = notifier.parts()
                let hub = notifier.hub
                let notifierContext = try backbone.context("realtime-notifier")
                backbone.run { try await ServiceHost.run(context: notifierContext, parts: notifierParts, handlesSignals: false) }
                #expect(await Integration.eventually(timeout: .seconds(60)) { port.withLock { $0 } != nil && hub.isLive })
                let realtimePort = try #require(port.withLock { $0 })

                // The app: upload-init, both files PUT to the presigned URLs, upload-complete.
                let codec = JWTCodec(secret: Self.secret)
                let token = codec.issue(userID: "owner-a", ttl: 3600)
                let fixtures = Integration.packageRoot.appendingPathComponent("Tests/USDTests/Fixtures")
                let usdzPath = fixtures.appendingPathComponent("roomscan.usdz").path
                let jsonPath = fixtures.appendingPathComponent("roomscan.roomplan.json").path
                let usdz = try [UInt8](Data(contentsOf: URL(fileURLWithPath: usdzPath)))
                let json = try [UInt8](Data(contentsOf: URL(fileURLWithPath: jsonPath)))
                func call(_ method: HTTPMethod, _ path: String, _ body: [UInt8]) async -> HTTPResponse {
                    await ingest.router.respond(to: HTTPRequest(method: method, path: path, headers: [
                        "Authorization": "Bearer \(token)", "Content-Type": "application/json"], body: body))
                }
                let created = await call(.post, "/rooms/uploads", try ContractCoding.encode(RoomUploadInitRequest(
                    title: "客厅", tags: ["living room"], visibility: .public, usdzBytes: Int64(usdz.count),
                    roomplanJsonBytes: Int64(json.count))))
                #expect(created.status == .created, "\(String(decoding: created.body, as: UTF8.self))")
                let answer = try ContractCoding.decode(RoomUploadInitResponse.self, from: created.body)
                #expect(try await PlainHTTP.send("PUT", try #require(answer.usdz.url), headers: answer.usdz.headers,
                                                 file: usdzPath).status == 200)
                #expect(try await PlainHTTP.send("PUT", try #require(answer.roomplanJson.url), headers: answer.roomplanJson.headers,
                                                 file: jsonPath).status == 200)
                let complete = RoomVersionCompleteRequest(
                    roomId: answer.roomId, versionId: answer.versionId, title: "客厅", tags: ["living room"], visibility: .public,
                    source: RoomSource(usdzKey: answer.usdz.key, usdzBytes: answer.usdz.bytes, roomplanJsonKey: answer.roomplanJson.key,
                                       roomplanJsonBytes: answer.roomplanJson.bytes, sha256: Digest.hex(Digest.sha256(usdz))),
                    redactions: [])
                let accepted = await call(.post, "/rooms/versions", try ContractCoding.encode(complete))
                #expect(accepted.status == .accepted, "\(String(decoding: accepted.body, as: UTF8.self))")

                // The notifier learns the room from the transcode request; the room screen joins then.
                let known = try await Integration.eventually(timeout: .seconds(60)) {
                    try await backbone.context("realtime-notifier").database.query("SELECT 1 FROM realtime_rooms WHERE room_id = $1", [answer.roomId]).count == 1
                }
                #expect(known, "the notifier knows the room")
                let output = NSTemporaryDirectory() + "flow-a-listener-\(UInt32.random(in: 0...UInt32.max)).jsonl"
                _ = FileManager.default.createFile(atPath: output, contents: nil)
                defer { try? FileManager.default.removeItem(atPath: output) }
                let listener = Process()
                listener.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                listener.arguments = [ProcessInfo.processInfo.environment["PYTHON"] ?? "python3",
                                      Integration.witness("room_listener.py"),
                                      "http://127.0.0.1:\(realtimePort)/realtime/v1", token, "-", "room:\(answer.roomId)", "120"]
                listener.standardOutput = FileHandle(forWritingAtPath: output)
                try listener.run()
                defer { if listener.isRunning { listener.terminate() } }
                func lines() -> [[String: Any]] {
                    let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
                    return text.split(separator: "\n").compactMap {
                        try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
                    }
                }
                let subscribed = await Integration.eventually(timeout: .seconds(30)) {
                    lines().contains { $0["status"] as? String == "SUBSCRIBED" }
                }
                #expect(subscribed, "\(lines())")

                // Only now does the worker start, so every status happens while the client listens.
                backbone.start(worker)
                let finished = await Integration.eventually(timeout: .seconds(120), every: .milliseconds(200)) { !listener.isRunning }
                #expect(finished && listener.terminationStatus == 0, "\(lines())")
                let broadcasts = lines().compactMap { $0["broadcast"] as? [String: Any] }
                let events = broadcasts.compactMap { $0["event"] as? String }
                let payloads = broadcasts.compactMap { $0["payload"] as? [String: Any] }
                #expect(events.last == "ready", "\(events)")
                #expect(events.dropLast().allSatisfy { $0 == "transcode_progress" } && events.count >= 2, "\(events)")
                let progress = payloads.dropLast()
                #expect(progress.first?["status"] as? String == "queued", "\(progress)")
                #expect(progress.compactMap { $0["stage"] as? String } == TranscodeStage.allCases.map(\.rawValue),
                        "every stage, in order: \(progress)")
                #expect(progress.allSatisfy { ["queued", "transcoding"].contains($0["status"] as? String ?? "") })
                #expect(payloads.last?["version_id"] as? String == answer.versionId)
                #expect(payloads.last?["status"] as? String == "ready")

                // The catch-up query, as the app asks it after (re)joining.
                let response = await worker.router.respond(to: HTTPRequest(
                    method: .get, path: "/rooms/versions/\(answer.versionId)", headers: ["Authorization": "Bearer \(token)"]))
                #expect(response.status == .ok)
                let details = try ContractCoding.decode(RoomVersionDetails.self, from: response.body)
                #expect(details.status == .ready)
                #expect(["A", "B", "C"].contains(details.qualityGrade ?? ""))
                let outputs = try #require(details.outputs)
                #expect(outputs.layers.keys.contains("walls"))
                for url in [outputs.manifest, outputs.thumbnailPng] + outputs.layers.values {
                    #expect(try await PlainHTTP.send("GET", url).status == 200, "\(url)")
                }
                if let grade = payloads.last?["qualityGrade"] as? String ?? payloads.last?["quality_grade"] as? String {
                    #expect(grade == details.qualityGrade)
                }
            }
        }
    }
}
