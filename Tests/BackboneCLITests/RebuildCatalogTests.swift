import Auth
@testable import BackboneCLI
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import Kafka
import Postgres
import ServiceLogging
import Testing

/// `backbone rebuild catalog`: the room catalog is fed by several topics (the uploads, the
/// requests and the statuses), so the rebuild reads all of them, chases the live consumer in every
/// partition of every one and hands all those positions over at the swap. The built
/// `backbone` against the real transcode-worker (a child process, serving `/rest/v1/rooms`),
/// a real PostgreSQL and an embedded Kafka cluster in this process.
@Suite("backbone rebuild catalog", .serialized, .timeLimit(.minutes(3)), .enabled(if: Integration.isEnabled))
struct RebuildCatalogTests {
    typealias Stack = RebuildCommandTests.Stack
    static let owners = ["alice", "bob", "carol"]
    static let t0 = Date(timeIntervalSince1970: 1_796_000_000)

    static func request(room: String, version: String, owner: String, title: String, visibility: RoomVisibility,
                        at: Date) -> RoomTranscodeRequest {
        let complete = RoomVersionCompleteRequest(
            roomId: room, versionId: version, title: title, tags: ["kitchen", title.hasPrefix("room-1") ? "loft" : "nook"],
            visibility: visibility,
            source: RoomSource(usdzKey: "rooms/\(room)/\(version)/source.usdz", usdzBytes: 1_000,
                               roomplanJsonKey: "rooms/\(room)/\(version)/roomplan.json", roomplanJsonBytes: 100),
            redactions: [])
        return RoomTranscodeRequest(ownerUserId: owner, request: complete, requestedAt: at)
    }

    /// Every record of `count` rooms: one or two versions each, queued → transcoding → ready
    /// (grade B, or C), failed, or still transcoding; for every other room the statuses are
    /// produced before the request (they are on another topic, the catalog takes either order);
    /// every third room's first version announced at upload-init; and two uploads abandoned.
    static func rooms(_ count: Int) -> (records: [KafkaProducerRecord], rooms: [String], versions: [String]) {
        var records: [KafkaProducerRecord] = [], rooms: [String] = [], versions: [String] = []
        for i in 0..<count {
            let room = "room-\(i)", owner = owners[i % owners.count]
            rooms.append(room)
            for v in 0..<(i % 5 == 2 ? 2 : 1) {
                let version = "\(room)-v\(v)", at = t0.addingTimeInterval(Double(i * 60 + v * 30))
                versions.append(version)
                let request = request(room: room, version: version, owner: owner, title: "room-\(i) v\(v)",
                                      visibility: i % 4 == 3 ? .private : .public, at: at)
                func status(_ status: RoomVersionStatus, _ seconds: Double, stage: String? = nil, grade: String? = nil,
                            failed: Bool = false) -> RoomTranscodeStatus {
                    let base = "rooms/\(room)/\(version)/"
                    return RoomTranscodeStatus(
                        roomId: room, versionId: version, ownerUserId: owner, visibility: request.visibility, status: status,
                        stage: stage, manifestKey: grade.map { _ in base + "layer_manifest.json" },
                        thumbnailKey: grade.map { _ in base + "thumbnail.webp" }, glbKeys: grade.map { _ in [base + "layers/walls.glb"] },
                        qualityGrade: grade, code: failed ? .roomTranscodeFailed : nil, reason: failed ? "not a zip archive" : nil,
                        at: at.addingTimeInterval(seconds))
                }
                var statuses = [status(.queued, 1), status(.transcoding, 2, stage: "downloading")]
                if i % 6 == 5 { statuses.append(status(.failed, 3, failed: true)) }
                else if i % 7 != 6 { statuses.append(status(.ready, 4, grade: i % 5 == 0 ? "C" : "B")) }
                let requestRecord = KafkaProducerRecord(topic: Topics.roomTranscodeRequests, key: Array(room.utf8),
                                                        value: try! ContractCoding.encode(request))
                let statusRecords = statuses.map {
                    KafkaProducerRecord(topic: Topics.roomTranscodeStatus, key: Array(room.utf8), value: try! ContractCoding.encode($0))
                }
                records += i % 2 == 0 ? statusRecords + [requestRecord] : [requestRecord] + statusRecords
                if i % 3 == 0, v == 0 {
                    records.append(upload(room: room, version: version, owner: owner, .uploading, at: at.addingTimeInterval(-10)))
                }
            }
        }
        for n in 0..<2 {
            let room = "gone-\(n)", version = "gone-\(n)-v0"
            rooms.append(room)
            versions.append(version)
            records += [upload(room: room, version: version, owner: "alice", .uploading, at: t0),
                        upload(room: room, version: version, owner: "alice", .abandoned, at: t0.addingTimeInterval(86_400))]
        }
        return (records, rooms, versions)
    }

    static func upload(room: String, version: String, owner: String, _ status: RoomUploadEvent.Status, at: Date) -> KafkaProducerRecord {
        let event = RoomUploadEvent(roomId: room, versionId: version, ownerUserId: owner, status: status, title: "draft \(room)",
                                    tags: ["draft"], visibility: .public, expiresAt: at.addingTimeInterval(86_400), at: at)
        return KafkaProducerRecord(topic: Topics.roomUploads, key: Array(room.utf8), value: try! ContractCoding.encode(event))
    }

    /// Both catalog tables' rows of `rooms`, as JSON, sorted.
    static func snapshot(_ client: PostgresClient, rooms: [String]) async throws -> [String] {
        var result: [String] = []
        for table in ["catalog_rooms", "catalog_versions"] {
            result += try await client.query("SELECT to_jsonb(t)::text AS j FROM \(table) t WHERE room_id = ANY($1) ORDER BY 1", [rooms])
                .map { "\(table) " + (try $0.decode(String.self, "j")) }
        }
        return result
    }

    @Test("a corrupted catalog: --dry-run names exactly the damaged rows; a rebuild killed half-way resumes and swaps while GET /rest/v1/rooms answers 200 with the old or the new catalog and records arrive on its topics")
    func rebuildCatalog() async throws {
        let topics = try #require(try RebuildTarget.named("catalog", environment: [:])).topics
        // The catalog's three topics, and the remixes (their forks' rows; read by the social group).
        #expect(topics == [Topics.roomTranscodeRequests, Topics.roomTranscodeStatus, Topics.roomUploads, Topics.roomInteractions])
        try await RebuildCommandTests.withStack(services: false) { stack in
            let (records, rooms, versions) = Self.rooms(60)
            try await stack.seedRooms(topics: topics, records)
            try await stack.skipTranscodeJobs()
            let port = Integration.freePort()
            stack.services.append(try ServiceProcess(executable: "transcode-worker", environment: stack.storelessWorkerEnvironment(port: port)))
            #expect(await stack.caughtUp(group: "room-catalog", topics: topics), "transcode-worker did not project the catalog: \(stack.services.last?.log ?? "")")
            let clean = try await Self.snapshot(stack.client, rooms: rooms)
            #expect(clean.count == rooms.count - 2 + versions.count, "the abandoned rooms have no room row")

            // Damage: a changed room, a changed and a missing version, a room no topic announced.
            _ = try await stack.client.execute("UPDATE catalog_rooms SET title = 'tampered' WHERE room_id = 'room-58'")
            _ = try await stack.client.execute("UPDATE catalog_versions SET status = 'failed' WHERE version_id = 'room-1-v0'")
            _ = try await stack.client.execute("DELETE FROM catalog_versions WHERE version_id = 'room-2-v1'")
            _ = try await stack.client.execute("""
                INSERT INTO catalog_rooms (room_id, owner_id, created_at, updated_at, latest_version_id, latest_status, state, feed_rank)
                VALUES ('ghost', 'alice', now(), now(), 'ghost-v0', 'ready', 'published', '0.ghost')
                """)
            let expected = RebuildCommandTests.normalized([
                #"catalog_rooms changed {"room_id" : "room-58"}"#, #"catalog_rooms removed {"room_id" : "ghost"}"#,
                #"catalog_versions changed {"version_id" : "room-1-v0"}"#, #"catalog_versions added {"version_id" : "room-2-v1"}"#,
            ])
            let diff = try await CLIProcess.run(["rebuild", "catalog", "--dry-run", "--rows", "100"], environment: stack.environment)
            #expect(diff.status == 3, "\(diff.stderr)")
            #expect(try RebuildCommandTests.differences(diff) == expected, "\(diff.stdout)")
            #expect(diff.lines.contains { $0.contains(#""event":"compared""#) && $0.contains(#""\#(Topics.roomTranscodeStatus)":{"#) },
                    "the positions of every topic: \(diff.stdout)")
            #expect(try await !stack.schemaExists("rebuild_catalog"))

            // A rebuild killed half-way: its shadow keeps a position per partition of every topic.
            _ = try await stack.rebuildKilled("catalog", after: 30)
            #expect(try await stack.schemaExists("rebuild_catalog"))
            let shadowTopics = try await stack.client.query("SELECT DISTINCT topic FROM rebuild_catalog.rebuild_positions ORDER BY 1")
                .map { try $0.decode(String.self, "topic") }
            #expect(shadowTopics == topics.sorted())

            // Readers of the feed and of "my rooms"; writers on both topics, throughout the rebuild.
            let codec = JWTCodec(secret: RebuildCommandTests.secret)
            let base = "http://127.0.0.1:\(port)/rest/v1/rooms?"
            let feed = base + "visibility=eq.public&order=created_at.desc&limit=20&select=id,title,quality_grade,current_version_id,created_at"
            let mine = base + "owner_id=eq.alice&order=created_at.desc&limit=100&select=id,title,state,latest_status"
            let (bob, alice) = (codec.issue(userID: "bob", ttl: 3600), codec.issue(userID: "alice", ttl: 3600))
            let http = DemoHTTPClient()
            let feedBefore = try await http.send("GET", service: "catalog", url: feed, token: bob).text
            let mineBefore = try await http.send("GET", service: "catalog", url: mine, token: alice).text
            #expect(feedBefore.contains("tampered") && mineBefore.contains("ghost"))
            let stop = RebuildCommandTests.StopFlag()
            let readers = RebuildCommandTests.readers(until: stop, (feed, bob), (mine, alice))
            let writers = Task {
                for round in 0..<15 where !stop.isSet {
                    // Private rooms of another user: neither reader sees them.
                    let late = (0..<2).flatMap { n -> [KafkaProducerRecord] in
                        let room = "late-\(round)-\(n)"
                        let request = Self.request(room: room, version: room + "-v0", owner: "dave", title: room, visibility: .private,
                                                   at: Date())
                        let queued = RoomTranscodeStatus(roomId: room, versionId: room + "-v0", ownerUserId: "dave", visibility: .private,
                                                         status: .queued, at: Date())
                        return [KafkaProducerRecord(topic: Topics.roomTranscodeStatus, key: Array(room.utf8), value: try! ContractCoding.encode(queued)),
                                KafkaProducerRecord(topic: Topics.roomTranscodeRequests, key: Array(room.utf8), value: try! ContractCoding.encode(request))]
                    }
                    for result in await stack.producer.send(late) { _ = try result.get() }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            let run = try await CLIProcess.run(["rebuild", "catalog", "--batch", "20"], environment: stack.environment)
            try await Task.sleep(for: .milliseconds(500))  // the readers go on a little on the new catalog
            stop.set()
            let answers = try await readers.value
            try await writers.value
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.lines.first?.contains(#""event":"resumed""#) == true, "\(run.stdout)")
            #expect(run.lines.last?.contains(#""event":"swapped""#) == true, "\(run.stdout)")
            #expect(try await !stack.schemaExists("rebuild_catalog"))

            let feedAfter = try await http.send("GET", service: "catalog", url: feed, token: bob).text
            let mineAfter = try await http.send("GET", service: "catalog", url: mine, token: alice).text
            #expect(!feedAfter.contains("tampered") && !mineAfter.contains("ghost") && feedAfter != "[]")
            #expect(answers.contains { $0.1 == feed && $0.2 == feedBefore } && answers.contains { $0.1 == feed && $0.2 == feedAfter },
                    "the readers saw both catalogs: \(answers.count) answers")
            for (status, url, body) in answers {
                #expect(status == 200, "\(url): \(body)")
                let allowed = url == feed ? [feedBefore, feedAfter] : [mineBefore, mineAfter]
                #expect(allowed.contains(body), "\(url) answered neither the old nor the new catalog: \(body)")
            }

            // The rooms are the clean projection again, and the live consumer went on from the
            // handed-over positions in both topics: nothing twice, nothing skipped.
            #expect(await stack.caughtUp(group: "room-catalog", topics: topics))
            #expect(try await Self.snapshot(stack.client, rooms: rooms) == clean)
            let late = try await stack.client.query("SELECT count(*) AS n FROM catalog_versions WHERE owner_id = 'dave'").first
            #expect(try late?.decode(Int64.self, "n") == 30)
            let check = try await CLIProcess.run(["rebuild", "catalog", "--dry-run"], environment: stack.environment)
            #expect(check.status == 0, "\(check.stdout)")
        }
    }
}
