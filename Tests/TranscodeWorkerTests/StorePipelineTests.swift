import BackboneTestSupport
import Auth
import Contracts
import Foundation
import HTTPRouting
import Hashing
import ObjectStore
import Testing
@testable import TranscodeWorker

/// The worker with its real pipeline: sources in a real SeaweedFS, RoomTranscoder, outputs
/// back in the store, statuses on the topic.
@Suite("transcode worker: RoomPlan scans through a real S3 store", .serialized, .enabled(if: Integration.isEnabled),
       .timeLimit(.minutes(4)))
struct StorePipelineTests {
    static let fixtures = Integration.packageRoot.appendingPathComponent("Tests/USDTests/Fixtures")

    static func upload(_ store: any ObjectStore, package: String, roomplan: String = "roomscan.roomplan.json",
                       harness: JobLifecycleTests.Harness, declaredSHA256: String? = nil,
                       visibility: RoomVisibility = .public) async throws -> RoomTranscodeRequest {
        var request = harness.request(title: "scan", visibility: visibility)
        let usdz = try [UInt8](Data(contentsOf: fixtures.appendingPathComponent(package)))
        let json = try [UInt8](Data(contentsOf: fixtures.appendingPathComponent(roomplan)))
        try await store.put(usdz, key: request.source.usdzKey, contentType: "model/vnd.usdz+zip")
        try await store.put(json, key: request.source.roomplanJsonKey, contentType: "application/json")
        request.source.usdzBytes = Int64(usdz.count)
        request.source.roomplanJsonBytes = Int64(json.count)
        request.source.sha256 = declaredSHA256 ?? Digest.hex(Digest.sha256(usdz))
        return request
    }

    @Test("a RoomPlan scan becomes ready: manifest, one GLB per layer and both thumbnails in the store, presigned links that work")
    func scanBecomesReady() async throws {
        try await SeaweedFSFixture.with { s3 in
            let store = S3ObjectStore(configuration: s3)
            let harness = try await JobLifecycleTests.Harness()
            let request = try await Self.upload(store, package: "roomscan.usdz", harness: harness)
            let service = harness.service(StoreTranscodePipeline(store: store, converter: RoomScanConverter(),
                                                                 workDirectory: NSTemporaryDirectory(), maxJobBytes: 64 << 20),
                                          links: StoreOutputLinks(store: store, ttl: .seconds(300)))
            try await JobLifecycleTests.running(service) { router in
                try await harness.produce([request])
                #expect(try await Integration.eventually(timeout: .seconds(60)) {
                    try await harness.jobStatus(request.versionId) == "ready"
                })
                // The catalog was brought to `ready` with the job, before the status went out:
                // what the app reads on the pushed `ready` (the catch-up, the room) says it too.
                let token = JWTCodec(secret: JobLifecycleTests.secret).issue(userID: request.ownerUserId, ttl: 600)
                let catchUp = await router.respond(to: HTTPRequest(
                    method: .get, path: "/rest/v1/room_versions", query: ["id": "eq.\(request.versionId)", "select": "id,status"],
                    headers: ["Authorization": "Bearer \(token)"]))
                #expect(String(decoding: catchUp.body, as: UTF8.self) == #"[{"id":"\#(request.versionId)","status":"ready"}]"#)
                let base = "rooms/\(request.roomId)/\(request.versionId)/"
                let keys = try await store.list(prefix: base).map(\.key)
                #expect(keys.contains(base + "layer_manifest.json"))
                #expect(keys.contains(base + "thumbnail.png") && keys.contains(base + "thumbnail.webp"))
                #expect(keys.contains(base + "layers/walls.glb"))
                let manifest = try JSONSerialization.jsonObject(with: Data(try await store.getBytes(base + "layer_manifest.json"))) as? [String: Any]
                #expect((manifest?["package"] as? [String: Any])?["sha256"] as? String == request.source.sha256)
                #expect(manifest?["versionId"] as? String == request.versionId)

                // The catch-up query gives links a plain HTTP client can fetch.
                let response = await JobLifecycleTests.call(router, .get, "/rooms/versions/\(request.versionId)", user: "someone-else")
                #expect(response.status == .ok, "a ready version of a public room is visible to anyone")
                let details = try ContractCoding.decode(RoomVersionDetails.self, from: response.body)
                let outputs = try #require(details.outputs)
                #expect(["A", "B", "C"].contains(details.qualityGrade ?? ""))
                for url in [outputs.manifest, outputs.thumbnailPng] + outputs.layers.values {
                    #expect(try await PlainHTTP.send("GET", url).status == 200, "\(url)")
                }
                #expect(outputs.layers.keys.contains("walls"))

                #expect(try await Integration.eventually { try await harness.published()[request.versionId]?.last?.status == .ready })
                let statuses = try await harness.published()[request.versionId] ?? []
                #expect(statuses.compactMap(\.stage) == TranscodeStage.allCases.map(\.rawValue))
                #expect(statuses.last?.status == .ready && statuses.last?.glbKeys?.contains(base + "layers/walls.glb") == true)
            }
            await harness.close()
        }
    }

    @Test("bad packages fail with ROOM_TRANSCODE_FAILED and a reason; a good room behind them is still ready")
    func badPackagesFail() async throws {
        try await SeaweedFSFixture.with { s3 in
            let store = S3ObjectStore(configuration: s3)
            let harness = try await JobLifecycleTests.Harness()
            let bomb = try await Self.upload(store, package: "zip_bomb.usdz", harness: harness)
            let tampered = try await Self.upload(store, package: "roomscan.usdz", harness: harness,
                                                 declaredSHA256: String(repeating: "0", count: 64))
            let notZip = try await Self.upload(store, package: "wrong_magic.usdz", harness: harness)
            var missing = try await Self.upload(store, package: "roomscan.usdz", harness: harness)
            try await store.delete(missing.source.usdzKey)
            missing.title = "missing"
            let good = try await Self.upload(store, package: "roomscan_usdc.usdz", roomplan: "roomscan_usdc.roomplan.json",
                                             harness: harness)
            let service = harness.service(StoreTranscodePipeline(store: store, converter: RoomScanConverter(),
                                                                 workDirectory: NSTemporaryDirectory(), maxJobBytes: 64 << 20),
                                          links: StoreOutputLinks(store: store, ttl: .seconds(300)))
            try await JobLifecycleTests.running(service) { _ in
                try await harness.produce([bomb, tampered, notZip, missing, good])
                #expect(try await Integration.eventually(timeout: .seconds(90)) {
                    try await harness.jobStatus(good.versionId) == "ready"
                })
                for request in [bomb, tampered, notZip, missing] {
                    #expect(try await Integration.eventually { try await harness.jobStatus(request.versionId) == "failed" })
                }
                #expect(try await Integration.eventually { try await harness.published()[missing.versionId]?.last?.status == .failed })
                let published = try await harness.published()
                for request in [bomb, tampered, notZip, missing] {
                    let last = try #require(published[request.versionId]?.last)
                    #expect(last.status == .failed && last.code == .roomTranscodeFailed)
                    #expect(!(last.reason ?? "").isEmpty)
                }
                #expect(published[tampered.versionId]?.last?.reason?.contains("sha256") == true)
                #expect(published[missing.versionId]?.last?.reason?.contains("no longer in the store") == true)
            }
            await harness.close()
        }
    }
}
