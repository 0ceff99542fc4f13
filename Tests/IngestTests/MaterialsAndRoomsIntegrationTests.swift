import Auth
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import Ingest
import Kafka
import Postgres
import ServiceRuntime
import Testing

@Suite("Materials catalog and room upload completion against Postgres and the embedded Kafka cluster", .serialized,
       .enabled(if: Integration.isEnabled), .timeLimit(.minutes(3)))
struct MaterialsAndRoomsIntegrationTests {
    static func withHarness(configuration: IngestConfiguration = IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000),
                            _ body: (IngestHarness) async throws -> Void) async throws {
        try await IngestHarness.with(configuration: configuration, body)
    }

    @Test("only a service token maintains the catalog; a deletion takes effect for the next batch")
    func catalogMaintenance() async throws {
        try await Self.withHarness { harness in
            let body = try ContractCoding.encode(MaterialUpsertRequest(readingTargetType: .knowledgeSource, knowledgeBaseId: "kb-1"))
            let asUser = await harness.request(.put, "/materials/m1", token: harness.userToken("u1"), body: body)
            #expect(asUser.status == .forbidden)
            #expect(asUser.errorCode == "FORBIDDEN")
            let anonymous = await harness.request(.put, "/materials/m1", token: nil, body: body)
            #expect(anonymous.status == .unauthorized)

            let put = await harness.request(.put, "/materials/m1", token: harness.serviceToken, body: body)
            #expect(put.status == .ok)
            let created = try put.decoded(MaterialResponse.self)
            #expect(created.materialId == "m1" && created.deleted == false && created.knowledgeBaseId == "kb-1")
            #expect(try await harness.postBatch(user: "u1", events: [sampleEvent(material: "m1")])
                .decoded(ReadingEventBatchResponse.self).accepted == 1)

            let deleted = await harness.request(.delete, "/materials/m1", token: harness.serviceToken, body: [])
            #expect(deleted.status == .ok)
            #expect(try deleted.decoded(MaterialResponse.self).deleted)
            let after = try await harness.postBatch(user: "u1", events: [sampleEvent(material: "m1")]).decoded(ReadingEventBatchResponse.self)
            #expect(after.results.first?.code == .sourceDeleted)

            let missing = await harness.request(.delete, "/materials/nothing", token: harness.serviceToken, body: [])
            #expect(missing.status == .notFound)
            let ownerless = try ContractCoding.encode(MaterialUpsertRequest(readingTargetType: .temporaryFile))
            let bad = await harness.request(.put, "/materials/tmp", token: harness.serviceToken, body: ownerless)
            #expect(bad.status == .badRequest)
            #expect(bad.errorCode == "INVALID_FIELD")
            let notJSON = await harness.request(.put, "/materials/tmp", token: harness.serviceToken, body: Array("{".utf8))
            #expect(notJSON.errorCode == "INVALID_JSON")
        }
    }

    @Test("a deletion written by another process is seen once the cache TTL has passed")
    func deletionElsewhere() async throws {
        try await Self.withHarness(configuration: IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000,
                                                                      materialCacheTTL: .milliseconds(300))) { harness in
            _ = try await harness.putMaterial("m2", MaterialUpsertRequest(readingTargetType: .knowledgeSource))
            #expect(try await harness.postBatch(user: "u1", events: [sampleEvent(material: "m2")])
                .decoded(ReadingEventBatchResponse.self).accepted == 1)
            try await harness.context.database.execute("UPDATE materials SET deleted = true WHERE material_id = 'm2'")
            try await Task.sleep(for: .milliseconds(400))
            let after = try await harness.postBatch(user: "u1", events: [sampleEvent(material: "m2")]).decoded(ReadingEventBatchResponse.self)
            #expect(after.results.first?.code == .sourceDeleted)
        }
    }

    static func roomBody(room: String = UUID().uuidString, version: String = UUID().uuidString, usdzBytes: Int64 = 10_000_000,
                         tags: [String] = ["客厅"]) -> RoomVersionCompleteRequest {
        RoomVersionCompleteRequest(
            roomId: room, versionId: version, title: "Living room", tags: tags, visibility: .private,
            source: RoomSource(usdzKey: "rooms/\(room)/\(version)/source.usdz", usdzBytes: usdzBytes,
                               roomplanJsonKey: "rooms/\(room)/\(version)/roomplan.json", roomplanJsonBytes: 1_000),
            redactions: [Redaction(textureRef: "textures/0.png", kind: .face,
                                   region: RedactionRegion(x: 0.1, y: 0.1, width: 0.2, height: 0.2), method: "gaussian")])
    }

    @Test("upload-complete queues one transcode request per version, keyed by room, and repeats answer the same")
    func roomVersions() async throws {
        try await Self.withHarness { harness in
            let request = Self.roomBody()
            let token = harness.userToken("owner-1")
            let first = await harness.request(.post, "/rooms/versions", token: token, body: try ContractCoding.encode(request))
            #expect(first.status == .accepted)
            #expect(try first.decoded(RoomVersionAccepted.self) == RoomVersionAccepted(versionId: request.versionId, status: .queued))
            let again = await harness.request(.post, "/rooms/versions", token: token, body: try ContractCoding.encode(request))
            #expect(again.status == .accepted)
            #expect(again.body == first.body)

            let records = try harness.readTopic("room.transcode.requests.v1", expecting: 2)
            #expect(records.count == 1)
            #expect(records.first?.key == request.roomId)
            let value = try ContractCoding.decoder.decode(RoomTranscodeRequest.self, from: Data((records.first?.value ?? "").utf8))
            #expect(value.ownerUserId == "owner-1" && value.versionId == request.versionId && value.redactions.count == 1)

            let rows = try await harness.context.database.query("""
                SELECT r.owner_user_id, r.visibility, v.status FROM rooms r JOIN room_versions v USING (room_id) WHERE v.version_id = $1
                """, [request.versionId])
            #expect(try rows.first?.decode(String.self, "owner_user_id") == "owner-1")
            #expect(try rows.first?.decode(String.self, "visibility") == "private")
            #expect(try rows.first?.decode(String.self, "status") == "queued")

            let intruder = await harness.request(.post, "/rooms/versions", token: harness.userToken("someone"),
                                                 body: try ContractCoding.encode(Self.roomBody(room: request.roomId)))
            #expect(intruder.status == .forbidden)
        }
    }

    @Test("upload-complete refuses oversized scans, bad tags, bad redactions and uploads over the monthly quota")
    func roomRejections() async throws {
        try await Self.withHarness(configuration: IngestConfiguration(monthlyUploadQuotaBytes: 25_000_000)) { harness in
            let token = harness.userToken("owner-2")
            func post(_ body: RoomVersionCompleteRequest) async throws -> HTTPResponse {
                await harness.request(.post, "/rooms/versions", token: token, body: try ContractCoding.encode(body))
            }
            #expect(try await post(Self.roomBody(usdzBytes: 60_000_000)).errorCode == "FILE_TOO_LARGE")
            #expect(try await post(Self.roomBody(tags: (0..<9).map { "t\($0)" })).errorCode == "INVALID_TAGS")
            var redacted = Self.roomBody()
            redacted.redactions[0].region.width = 2
            #expect(try await post(redacted).errorCode == "REDACTION_INVALID")
            let badKind = await harness.request(.post, "/rooms/versions", token: token, body: Array(#"""
                {"roomId":"\#(UUID().uuidString)","versionId":"\#(UUID().uuidString)","title":"x","tags":[],"visibility":"public",
                 "source":{"usdzKey":"a.usdz","usdzBytes":1,"roomplanJsonKey":"a.json","roomplanJsonBytes":1},
                 "redactions":[{"textureRef":"t","kind":"hands","region":{"x":0,"y":0,"width":1,"height":1},"method":"blur"}]}
                """#.utf8))
            #expect(badKind.errorCode == "REDACTION_INVALID")
            #expect(try await post(Self.roomBody(usdzBytes: 12_000_000)).status == .accepted)
            #expect(try await post(Self.roomBody(usdzBytes: 12_000_000)).status == .accepted)
            let over = try await post(Self.roomBody(usdzBytes: 12_000_000))
            #expect(over.errorCode == "QUOTA_EXCEEDED")
            #expect(try harness.readTopic("room.transcode.requests.v1", expecting: 3).count == 2)
            let missing = await harness.request(.post, "/rooms/versions", token: token, body: Array(#"{"roomId":"x"}"#.utf8))
            #expect(missing.errorCode == "INVALID_FIELD")
        }
    }

    @Test("with the broker down upload-complete is 503 and a retry after recovery queues the version")
    func roomBrokerDown() async throws {
        try await Self.withHarness { harness in
            let token = harness.userToken("owner-3")
            let request = Self.roomBody()
            try harness.cluster.setAllBrokersDown()
            let down = await harness.request(.post, "/rooms/versions", token: token, body: try ContractCoding.encode(request))
            #expect(down.status == .serviceUnavailable)
            #expect(down.headers["Retry-After"] != nil)
            let rows = try await harness.context.database.query("SELECT count(*)::bigint AS n FROM room_versions")
            #expect(try rows.first?.decode(Int64.self, "n") == 0)
            try harness.cluster.setAllBrokersUp()
        }
    }
}
