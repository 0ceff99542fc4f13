import BackboneTestSupport
import DevInfrastructure
import Contracts
import Foundation
import HTTPRouting
import Ingest
import Kafka
import Lifecycle
import ObjectStore
import Postgres
import ServiceRuntime
import Testing

/// How CrowdRoom's Swift code writes its calls (seed `002_*` §2.1, §4.2, §5): a face region as
/// `Codable` writes a `CGRect`, upload-init without `visibility`.
@Suite("the app's own encodings: a CGRect region, the {x,y,width,height} region, checked alike")
struct RedactionRegionEncodingTests {
    static func region(_ json: String) throws -> RedactionRegion {
        try ContractCoding.decoder.decode(RedactionRegion.self, from: Data(json.utf8))
    }

    @Test("a region as Swift's Codable writes a CGRect ([[x, y], [w, h]]) reads as the same rectangle as the object form, and is written as the object")
    func cgRect() throws {
        let rect = try Self.region("[[0.1, 0.2], [0.05, 0.07]]")
        #expect(rect == RedactionRegion(x: 0.1, y: 0.2, width: 0.05, height: 0.07))
        #expect(try Self.region(#"{"x":0.1,"y":0.2,"width":0.05,"height":0.07}"#) == rect)
        let written = try #require(try JSONSerialization.jsonObject(with: Data(ContractCoding.encode(rect))) as? [String: Double])
        #expect(written == ["x": 0.1, "y": 0.2, "width": 0.05, "height": 0.07])
    }

    @Test("a CGRect region is checked as the object form: outside 0…1 or zero-sized is not a valid region; a rectangle of the wrong shape does not decode")
    func cgRectChecked() throws {
        #expect(try Self.region("[[0.9, 0.2], [0.5, 0.1]]").isValid == false)
        #expect(try Self.region("[[0.1, 0.2], [0, 0.1]]").isValid == false)
        #expect(try Self.region("[[-0.1, 0.2], [0.1, 0.1]]").isValid == false)
        for malformed in ["[[0.1, 0.2], [0.1]]", "[[0.1, 0.2, 0.3], [0.1, 0.1]]", "[0.1, 0.2, 0.1, 0.1]",
                          "[[0.1, 0.2], [0.1, 0.1], [0, 0]]", #"{"x":0.1,"y":0.2}"#] {
            #expect(throws: (any Error).self, "\(malformed)") { try Self.region(malformed) }
        }
    }
}

@Suite("Edge Functions: the app's encodings and late calls — CGRect regions, no visibility, a late upload-complete, outages", .serialized,
       .enabled(if: Integration.isEnabled), .timeLimit(.minutes(5)))
struct AppEncodingIntegrationTests {
    typealias Uploads = RoomUploadIntegrationTests
    typealias Functions = EdgeFunctionTests

    @Test("upload-init without visibility is taken (a private room); upload-complete with a face region as a CGRect ([[x,y],[w,h]]) is 202 and the region reaches the transcode request; an out-of-range CGRect is REDACTION_INVALID")
    func cgRectAndNoVisibility() async throws {
        try await Uploads.withStack { harness, _ in
            let token = harness.userToken("app-swift")
            var body = Functions.initBody
            body["visibility"] = nil
            let created = try await Functions.call(harness, "upload-init", token: token, body)
            #expect(created.status == .created, "\(String(decoding: created.body, as: UTF8.self))")
            let answer = Functions.object(created)
            let version = try #require(answer["version_id"] as? String)
            let usdz = Uploads.file(2000), json = Uploads.file(300, fill: 0x7B)
            defer { for path in [usdz, json] { try? FileManager.default.removeItem(atPath: path) } }
            #expect(try await PlainHTTP.send("PUT", try #require(answer["presigned_usdz"] as? String), file: usdz).status == 200)
            #expect(try await PlainHTTP.send("PUT", try #require(answer["presigned_json"] as? String), file: json).status == 200)

            func face(_ region: Any) -> [String: Any] {
                ["texture_ref": "Textures/wall_0.png", "kind": "face", "region": region, "method": "gaussian_blur_r18"]
            }
            let outside = try await Functions.call(harness, "upload-complete", token: token,
                                                   ["version_id": version, "redactions": [face([[0.9, 0.2], [0.5, 0.1]])]])
            #expect(outside.status == .badRequest && outside.errorCode == "REDACTION_INVALID")
            let done = try await Functions.call(harness, "upload-complete", token: token,
                                                ["version_id": version, "redactions": [face([[0.1, 0.2], [0.05, 0.07]])]])
            #expect(done.status == .accepted, "\(String(decoding: done.body, as: UTF8.self))")

            let records = try harness.readTopic(harness.configuration.roomTranscodeTopic, expecting: 1)
            let request = try ContractCoding.decoder.decode(RoomTranscodeRequest.self, from: Data((records.first?.value ?? "").utf8))
            #expect(request.visibility == .private)
            #expect(request.redactions.map(\.region) == [RedactionRegion(x: 0.1, y: 0.2, width: 0.05, height: 0.07)])
            let room = try await harness.context.database.query("SELECT visibility FROM rooms WHERE room_id = $1",
                                                                [request.roomId]).first
            #expect(try room?.decode(String.self, "visibility") == "private")
        }
    }

    @Test("a late upload-complete, after the version was transcoded, answers ready (202) and queues nothing again")
    func lateCompleteAnswersReady() async throws {
        try await Uploads.withStack { harness, _ in
            let token = harness.userToken("app-late")
            let answer = Functions.object(try await Functions.call(harness, "upload-init", token: token, Functions.initBody))
            let version = try #require(answer["version_id"] as? String), room = try #require(answer["room_id"] as? String)
            let usdz = Uploads.file(2000), json = Uploads.file(300, fill: 0x7B)
            defer { for path in [usdz, json] { try? FileManager.default.removeItem(atPath: path) } }
            #expect(try await PlainHTTP.send("PUT", try #require(answer["presigned_usdz"] as? String), file: usdz).status == 200)
            #expect(try await PlainHTTP.send("PUT", try #require(answer["presigned_json"] as? String), file: json).status == 200)
            let body: [String: Any] = ["version_id": version, "redactions": []]
            #expect(try await Functions.call(harness, "upload-complete", token: token, body).status == .accepted)

            let follower = try #require(harness.parts.background.first { $0.name == "ingest-room-status" })
            let following = Task { try await follower.run() }
            defer { following.cancel() }
            let ready = RoomTranscodeStatus(roomId: room, versionId: version, ownerUserId: "app-late", visibility: .public,
                                            status: .ready, at: Date())
            _ = try await harness.context.producer.send(KafkaProducerRecord(
                topic: harness.configuration.roomStatusTopic, key: Array(room.utf8), value: try ContractCoding.encode(ready)))
            #expect(await Integration.eventually {
                let late = try? await Functions.call(harness, "upload-complete", token: token, body)
                return late?.status == .accepted && late.map(Functions.object)?["status"] as? String == "ready"
            })
            #expect(try harness.readTopic(harness.configuration.roomTranscodeTopic, expecting: 2).count == 1)
        }
    }

    @Test("the object store down at upload-complete: 503 WORKER_UNAVAILABLE with Retry-After, nothing queued")
    func storeOutageIsWorkerUnavailable() async throws {
        // A store nothing listens on: upload-init still signs (signing needs no store), completion cannot look.
        let dead = S3ObjectStore(configuration: S3Configuration(endpoint: "http://127.0.0.1:9", bucket: "rooms",
                                                                accessKeyId: "k", secretAccessKey: "s"))
        try await IngestHarness.with(objects: dead) { harness in
            let token = harness.userToken("app-store-down")
            let answer = Functions.object(try await Functions.call(harness, "upload-init", token: token, Functions.initBody))
            let version = try #require(answer["version_id"] as? String)
            let down = try await Functions.call(harness, "upload-complete", token: token, ["version_id": version, "redactions": []])
            #expect(down.status == .serviceUnavailable && down.errorCode == "WORKER_UNAVAILABLE")
            #expect(down.headers["Retry-After"] != nil)
            #expect(try harness.readTopic(harness.configuration.roomTranscodeTopic, expecting: 1).isEmpty)
        }
    }
}
