import Auth
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import HTTPServer
import Kafka
import Postgres
import ServiceLogging
import Testing
@testable import TranscodeWorker

/// A pipeline for the catalog's rooms: titles with `broken` fail, `slow` ones stay in
/// `transcoding` until cancelled, `rough` ones are graded C; the rest are ready with grade B.
struct CatalogPipeline: TranscodePipeline {
    func transcode(_ request: RoomTranscodeRequest,
                   enter: @escaping @Sendable (TranscodeStage) async throws -> Void) async throws -> TranscodeOutputs {
        try await enter(.downloading)
        if request.title.contains("slow") { try await Task.sleep(for: .seconds(600)) }
        if request.title.contains("broken") { throw TranscodeFailure("source.usdz is not a zip archive") }
        try await enter(.thumbnail)
        let base = "rooms/\(request.roomId)/\(request.versionId)/"
        return TranscodeOutputs(manifestKey: base + "layer_manifest.json", thumbnailKey: base + "thumbnail.png",
                                thumbnailWebpKey: base + "thumbnail.webp",
                                glbKeys: [base + "layers/walls.glb", base + "layers/objects_sofa.glb"],
                                qualityGrade: request.title.contains("rough") ? "C" : "B")
    }
}

@Suite("room catalog: the PostgREST calls of the CrowdRoom app", .serialized, .enabled(if: Integration.isEnabled),
       .timeLimit(.minutes(3)))
struct RoomCatalogTests {
    static let clients = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Clients")
    static let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/catalog_answer_shapes.json")

    static func request(_ harness: JobLifecycleTests.Harness, owner: String, title: String, tags: [String],
                        visibility: RoomVisibility, at: Date) -> RoomTranscodeRequest {
        var request = harness.request(title: title, owner: owner, visibility: visibility)
        request.tags = tags
        request.requestedAt = at
        return request
    }

    static func get(_ router: Router, _ path: String, query: [String: String], user: String) async -> HTTPResponse {
        let token = JWTCodec(secret: JobLifecycleTests.secret).issue(userID: user, ttl: 600)
        return await router.respond(to: HTTPRequest(method: .get, path: path, query: query, headers: ["apikey": token]))
    }

    static func json(_ response: HTTPResponse) -> Any? { try? JSONSerialization.jsonObject(with: Data(response.body)) }

    @Test("feed, detail, catch-up and my-rooms answer Supabase's postgrest client with the row-level rules; the rest is 400")
    func postgrestClientConformance() async throws {
        let harness = try await JobLifecycleTests.Harness()
        try harness.cluster.createTopic(Topics.deadLetter(for: harness.statuses), partitions: 3)
        let t0 = Date().addingTimeInterval(-600)
        let kitchen = Self.request(harness, owner: "alice", title: "Sunny Kitchen", tags: ["kitchen", "nook"], visibility: .public, at: t0)
        let study = Self.request(harness, owner: "alice", title: "Private study", tags: ["study"], visibility: .private,
                                 at: t0.addingTimeInterval(10))
        let hall = Self.request(harness, owner: "alice", title: "broken hall", tags: ["hall"], visibility: .public,
                                at: t0.addingTimeInterval(20))
        let rough = Self.request(harness, owner: "bob", title: "rough kitchen nook", tags: ["nook"], visibility: .public,
                                 at: t0.addingTimeInterval(30))
        let loft = Self.request(harness, owner: "alice", title: "Loft", tags: ["loft"], visibility: .public, at: t0.addingTimeInterval(40))
        let attic = Self.request(harness, owner: "alice", title: "slow attic", tags: [], visibility: .private, at: t0.addingTimeInterval(50))

        let base = harness.service(CatalogPipeline())
        var settings = base.configuration
        settings.concurrency = 4 // the slow room holds one slot for the whole test
        let service = TranscodeWorkerService(context: base.context, configuration: settings, pipeline: CatalogPipeline(),
                                             links: FixedLinks(), workerID: "catalog-worker")
        try await JobLifecycleTests.running(service) { router in
            // A record nobody can decode goes to the dead letters; the catalog carries on.
            for result in await harness.producer.send([KafkaProducerRecord(topic: harness.statuses, key: Array("k".utf8),
                                                                           value: Array("{not json".utf8))]) {
                _ = try result.get()
            }
            try await harness.produce([kitchen, study, hall, rough, loft, attic])
            let settled = await Integration.eventually(timeout: .seconds(60)) {
                let mine = await Self.get(router, "/rest/v1/rooms", query: ["owner_id": "eq.alice", "select": "id,state"], user: "alice")
                let states = (Self.json(mine) as? [[String: Any]])?.compactMap { $0["state"] as? String } ?? []
                let roughAnswer = await Self.get(router, "/rest/v1/rooms", query: ["id": "eq.\(rough.roomId)"], user: "bob")
                let roughPublished = (Self.json(roughAnswer) as? [[String: Any]])?.first?["current_version_id"] is String
                let atticAnswer = await Self.get(router, "/rest/v1/room_versions", query: ["id": "eq.\(attic.versionId)"], user: "alice")
                let atticTranscoding = (Self.json(atticAnswer) as? [[String: Any]])?.first?["stage"] is String
                return states.sorted() == ["failed", "in_progress", "published", "published", "published"] && roughPublished
                    && atticTranscoding
            }
            #expect(settled, "every room reached its state in the catalog")
            let dead = try await Integration.eventually {
                var total: Int64 = 0
                for p in 0..<3 { total += try await harness.admin.watermarks(topic: Topics.deadLetter(for: harness.statuses), partition: Int32(p)).high }
                // Set aside by each group that reads the statuses: the catalog's and the social read models'.
                return total == 2
            }
            #expect(dead, "the undecodable status went to the dead letters")

            // The owner retries the failed version: a second attempt, failed again.
            let retry = await JobLifecycleTests.call(router, .post, "/rooms/versions/\(hall.versionId)/retry", user: "alice")
            #expect(retry.status == .accepted)
            let retried = await Integration.eventually {
                let answer = await Self.get(router, "/rest/v1/room_versions", query: ["id": "eq.\(hall.versionId)"], user: "alice")
                let row = (Self.json(answer) as? [[String: Any]])?.first
                return row?["attempts"] as? Int == 2 && row?["status"] as? String == "failed"
            }
            #expect(retried, "the retry shows as a second attempt")

            // Supabase's own client, over real HTTP.
            let server = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0), router: router, logger: .disabled)
            try server.start()
            defer { Task { await server.shutdown(gracePeriod: .zero) } }
            let codec = JWTCodec(secret: JobLifecycleTests.secret)
            let spec: [String: Any] = [
                "alice": codec.issue(userID: "alice", ttl: 600), "bob": codec.issue(userID: "bob", ttl: 600),
                "public_room": kitchen.roomId, "private_room": study.roomId, "ready_version": kitchen.versionId,
                "failed_version": hall.versionId, "versions": [kitchen.versionId, hall.versionId, attic.versionId],
            ]
            let specText = String(decoding: try JSONSerialization.data(withJSONObject: spec), as: UTF8.self)
            let script = Self.clients.appendingPathComponent("catalog_client.py").path
            let python = ProcessInfo.processInfo.environment["PYTHON"] ?? "python3"
            let port = server.port
            let (status, output) = try await withCheckedThrowingContinuation { continuation in
                DispatchQueue.global().async {
                    continuation.resume(with: Result { try Integration.run(python, [script, "http://127.0.0.1:\(port)", specText]) })
                }
            }
            #expect(status == 0, "\(output)")
            let result = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any] ?? [:]
            let answers = result["answers"] as? [String: [String: Any]] ?? [:]
            func ids(_ name: String) -> [String] {
                (answers[name]?["data"] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? []
            }
            func code(_ name: String) -> String? { answers[name]?["code"] as? String }

            // Feed: public, published rooms only, newest first weighted by grade (the C room, 10 s
            // newer than the kitchen, ranks a day older), with thumbnails.
            #expect(ids("feed") == [loft.roomId, kitchen.roomId, rough.roomId])
            // The app's next page on the last row's created_at follows the weighted order; pure
            // recency is any other order.
            #expect(ids("feed_page1") == [loft.roomId, kitchen.roomId])
            #expect(ids("feed_page2") == [rough.roomId])
            #expect(ids("chronological") == [loft.roomId, rough.roomId, kitchen.roomId])
            let feedRow = (answers["feed"]?["data"] as? [[String: Any]])?.first { $0["id"] as? String == kitchen.roomId }
            #expect(feedRow?["thumbnail_path"] as? String == "rooms/\(kitchen.roomId)/\(kitchen.versionId)/thumbnail.webp")
            #expect((feedRow?["thumbnail_url"] as? String)?.contains("X-Amz-Signature") == true)
            #expect(feedRow?["state"] is NSNull, "owner-only columns are null for others")
            // Grade-weighted: the C room ranks as if a day older; the cursor's second page follows on.
            #expect(ids("ranked_page1") == [loft.roomId, kitchen.roomId])
            #expect(ids("ranked_page2") == [rough.roomId])
            #expect(Set(ids("by_tag")) == [kitchen.roomId, rough.roomId])
            #expect(Set(ids("search")) == [kitchen.roomId, rough.roomId])
            // Detail with the current version embedded.
            let detail = (answers["detail"]?["data"] as? [[String: Any]])?.first
            let current = detail?["current_version"] as? [String: Any]
            #expect(current?["id"] as? String == kitchen.versionId && current?["status"] as? String == "ready")
            #expect((current?["glb_urls"] as? [String: String])?["walls"]?.contains("layers/walls.glb") == true)
            #expect((answers["detail_single"]?["data"] as? [String: Any])?["id"] as? String == kitchen.roomId)
            // Private rooms and failed versions never reach anyone but their owner.
            #expect(ids("private_detail_other").isEmpty)
            #expect(ids("private_detail_owner") == [study.roomId])
            #expect(ids("version") == [kitchen.versionId])
            #expect(Set(ids("versions_in_owner")) == [kitchen.versionId, hall.versionId, attic.versionId])
            #expect(ids("versions_in_other") == [kitchen.versionId])
            #expect(Set(ids("other_rooms_of_alice")) == [kitchen.roomId, loft.roomId])
            // My rooms: one call, grouped.
            let mine = answers["my_rooms"]?["data"] as? [[String: Any]] ?? []
            let groups = Dictionary(grouping: mine, by: { $0["state"] as? String ?? "" }).mapValues { $0.compactMap { $0["id"] as? String } }
            #expect(Set(groups["published"] ?? []) == [kitchen.roomId, study.roomId, loft.roomId])
            #expect(groups["in_progress"] == [attic.roomId])
            #expect(groups["failed"] == [hall.roomId])
            let failedVersion = (mine.first { $0["id"] as? String == hall.roomId }?["room_versions"] as? [[String: Any]])?.first
            #expect(failedVersion?["error"] as? String == "ROOM_TRANSCODE_FAILED")
            // Outside the subset: 400 with a code naming the part.
            #expect(code("neq") == "UNSUPPORTED_OPERATOR")
            #expect(code("gt_on_title") == "UNSUPPORTED_OPERATOR")
            #expect(code("or") == "UNSUPPORTED_PARAMETER")
            #expect(code("order_owner") == "UNSUPPORTED_ORDER")
            #expect(code("embed_comments") == "UNSUPPORTED_SELECT")
            #expect(code("unknown_column") == "UNSUPPORTED_COLUMN")
            let unsupported = await Self.get(router, "/rest/v1/rooms", query: ["title": "neq.x"], user: "bob")
            #expect(unsupported.status == .badRequest)
            #expect(await Self.get(router, "/rest/v1/rooms", query: ["created_at": "lt.not-a-time"], user: "bob").status == .badRequest)
            let anonymous = await Self.get(router, "/rest/v1/rooms", query: [:], user: "")
            #expect(anonymous.status == .unauthorized)

            // Golden: the JSON shape of every answer.
            let shapes = result["shapes"] as? NSDictionary
            if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1", let shapes {
                let data = try JSONSerialization.data(withJSONObject: shapes, options: [.prettyPrinted, .sortedKeys])
                try data.write(to: Self.golden)
            }
            let expected = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.golden)) as? NSDictionary
            #expect(shapes == expected, "answer shapes differ from \(Self.golden.lastPathComponent)")

            // The app's cursor stays stable while rooms arrive: between the pages a new public
            // room lands above the cursor (not seen, nothing moves), and a new C room, ranking a
            // day older, lands below it in its weighted place: page 2 shows it once, then the
            // rest — no room of page 1 again, none left out.
            func feed(_ extra: [String: String]) async -> [[String: Any]] {
                let answer = await Self.get(router, "/rest/v1/rooms", query: [
                    "visibility": "eq.public", "order": "created_at.desc", "limit": "2", "select": "id,created_at"].merging(extra) { $1 },
                                            user: "bob")
                return Self.json(answer) as? [[String: Any]] ?? []
            }
            let page1 = await feed([:])
            let fresh = Self.request(harness, owner: "carol", title: "Fresh loft", tags: [], visibility: .public, at: Date())
            let freshRough = Self.request(harness, owner: "carol", title: "rough fresh attic", tags: [], visibility: .public, at: Date())
            try await harness.produce([fresh, freshRough])
            let arrived = await Integration.eventually(timeout: .seconds(30)) {
                let top = await feed(["limit": "10"]).compactMap { $0["id"] as? String }
                return top.contains(fresh.roomId) && top.contains(freshRough.roomId)
            }
            #expect(arrived, "the new rooms are in the feed")
            let cursor = try #require(page1.last?["created_at"] as? String)
            let page2 = await feed(["created_at": "lt.\(cursor)"])
            #expect(page1.compactMap { $0["id"] as? String } == [loft.roomId, kitchen.roomId])
            #expect(page2.compactMap { $0["id"] as? String } == [freshRough.roomId, rough.roomId], "no gap, no repeat")
        }
        await harness.close()
    }

    @Test("my rooms shows a version from upload-init on (uploading, then queued once its request is seen, in either order); an abandoned upload leaves it; nobody else sees them")
    func uploadingVersions() async throws {
        let harness = try await JobLifecycleTests.Harness()
        try harness.cluster.createTopic(Topics.deadLetter(for: harness.uploads), partitions: 1)
        let t0 = Date().addingTimeInterval(-60)
        func upload(_ room: String, _ version: String, _ status: RoomUploadEvent.Status, at seconds: Double) throws -> KafkaProducerRecord {
            let event = RoomUploadEvent(roomId: room, versionId: version, ownerUserId: "alice", status: status, title: "draft \(room)",
                                        tags: ["attic"], visibility: .public, expiresAt: t0.addingTimeInterval(86_400),
                                        at: t0.addingTimeInterval(seconds))
            return KafkaProducerRecord(topic: harness.uploads, key: Array(room.utf8), value: try ContractCoding.encode(event))
        }
        var completed = harness.request(title: "Final attic", owner: "alice", visibility: .public)
        completed.requestedAt = t0.addingTimeInterval(20)
        let (roomA, roomB, roomC) = ("room-a", "room-b", completed.roomId)
        // The request of room C is produced before its upload-init announcement (another topic).
        try await harness.produce([completed])
        for result in await harness.producer.send([
            try upload(roomA, "a-v1", .uploading, at: 0), try upload(roomB, "b-v1", .uploading, at: 1),
            try upload(roomB, "b-v1", .abandoned, at: 2), try upload(roomC, completed.versionId, .uploading, at: 3),
        ]) { _ = try result.get() }

        try await JobLifecycleTests.running(harness.service(CatalogPipeline()), only: ["room-catalog"]) { router in
            func mine(_ user: String) async -> [[String: Any]] {
                let answer = await Self.get(router, "/rest/v1/rooms", query: [
                    "owner_id": "eq.alice", "order": "id", "select": "id,title,state,latest_status,room_versions(id,status)"], user: user)
                return Self.json(answer) as? [[String: Any]] ?? []
            }
            let seen = await Integration.eventually(timeout: .seconds(30)) {
                let rooms = await mine("alice")
                return rooms.compactMap { $0["id"] as? String }.sorted() == [roomA, roomC].sorted()
                    && rooms.first { $0["id"] as? String == roomC }?["latest_status"] as? String == "queued"
            }
            let rooms = await mine("alice")
            #expect(seen, "\(rooms)")
            let a = rooms.first { $0["id"] as? String == roomA }
            #expect(a?["state"] as? String == "in_progress" && a?["latest_status"] as? String == "uploading")
            #expect(a?["title"] as? String == "draft room-a")
            #expect((a?["room_versions"] as? [[String: Any]])?.compactMap { $0["status"] as? String } == ["uploading"])
            let c = rooms.first { $0["id"] as? String == roomC }
            #expect(c?["title"] as? String == "Final attic" && c?["state"] as? String == "in_progress", "the request's title wins")
            // Nobody else: not the rooms, not the versions.
            #expect(await mine("bob").isEmpty)
            let probe = await Self.get(router, "/rest/v1/room_versions", query: ["id": "in.(a-v1,b-v1)"], user: "bob")
            #expect((Self.json(probe) as? [Any])?.isEmpty == true)
            let own = await Self.get(router, "/rest/v1/room_versions", query: ["id": "in.(a-v1,b-v1)"], user: "alice")
            #expect((Self.json(own) as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["a-v1"], "the abandoned version is gone")

            // Room A's upload is abandoned too: the room leaves "my rooms".
            for result in await harness.producer.send([try upload(roomA, "a-v1", .abandoned, at: 30)]) { _ = try result.get() }
            let gone = await Integration.eventually(timeout: .seconds(30)) {
                let rooms = await mine("alice")
                return rooms.compactMap { $0["id"] as? String } == [roomC]
            }
            let left = await mine("alice")
            #expect(gone, "\(left)")
        }
    }
}
