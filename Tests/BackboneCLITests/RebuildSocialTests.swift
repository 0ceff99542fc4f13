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

/// `backbone rebuild social` and the remixes in `backbone rebuild catalog`: the social read
/// models (comments, likes, profiles, the rooms' counts, notifications) are re-projected from
/// `room.interactions.v1` and the statuses, and a remix's fork — written into the catalog's
/// tables by the social consumer group — is part of the catalog's rebuild. The built `backbone`
/// against the real transcode-worker, a real PostgreSQL and an embedded Kafka cluster.
@Suite("backbone rebuild social", .serialized, .timeLimit(.minutes(4)), .enabled(if: Integration.isEnabled))
struct RebuildSocialTests {
    typealias Stack = RebuildCommandTests.Stack
    static let t0 = Date(timeIntervalSince1970: 1_796_000_000)
    static let socialTables = ["catalog_comments", "catalog_notifications", "catalog_likes", "catalog_profiles", "catalog_room_social"]

    static func interaction(_ kind: RoomInteraction.Kind, _ n: Int, actor: String, room: String? = nil, owner: String? = nil,
                            comment: String? = nil, author: String? = nil, body: String? = nil) -> RoomInteraction {
        RoomInteraction(interactionId: String(format: "00000000-0000-4000-8000-%012d", n), kind: kind, actorId: actor, roomId: room,
                        roomOwnerId: owner, roomVisibility: room == nil ? nil : .public, commentId: comment, commentAuthorId: author,
                        body: body, displayName: kind == .profileUpdated ? "\(actor) v\(n)" : nil,
                        avatarPath: kind == .profileUpdated ? "avatars/\(actor).png" : nil, at: t0.addingTimeInterval(3_600 + Double(n)))
    }

    static func remix(_ n: Int, source: String, owner: String, fork: String, by remixer: String) -> RoomInteraction {
        var remix = interaction(.remixCreated, n, actor: remixer, room: source, owner: owner)
        remix.forkRoomId = fork
        remix.forkVersionId = "\(fork)-v0"
        remix.sourceVersionId = "\(source)-v0"
        remix.title = "Remix of \(source)"
        remix.tags = ["remix"]
        remix.outputKeys = ["rooms/\(fork)/\(fork)-v0/layer_manifest.json", "rooms/\(fork)/\(fork)-v0/thumbnail.png",
                            "rooms/\(fork)/\(fork)-v0/layers/walls.glb"]
        // The source version's grade as ingest saw it ready (RebuildCatalogTests.rooms: room-0 is C, the others B).
        remix.sourceQualityGrade = source == "room-0" ? "C" : "B"
        return remix
    }

    /// Profiles, comments (one removed by the room's owner, one removed before its creation is
    /// delivered, one the owner wrote herself), likes (one taken back, one delivered twice),
    /// and three remixes (one of one's own room) on the public rooms of `RebuildCatalogTests.rooms`.
    static func interactions() -> [RoomInteraction] {
        var all: [RoomInteraction] = []
        var n = 0
        func next() -> Int { n += 1; return n }
        for user in ["alice", "bob", "carol", "dave"] { all.append(interaction(.profileUpdated, next(), actor: user)) }
        all.append(interaction(.profileUpdated, next(), actor: "bob"))  // a newer profile wins
        // room-i is owned by RebuildCatalogTests.owners[i % 3] and public unless i % 4 == 3.
        let rooms = [(0, "alice"), (1, "bob"), (2, "carol"), (4, "bob"), (5, "carol")]
        for (i, owner) in rooms {
            let room = "room-\(i)"
            for (c, author) in ["dave", "alice", "bob", "carol"].enumerated() {
                let comment = String(format: "c0000000-0000-4000-8000-%06d%06d", i, c)
                all.append(interaction(.commentCreated, next(), actor: author, room: room, owner: owner, comment: comment, author: author,
                                       body: "comment \(c) by \(author) on \(room)"))
            }
            for liker in ["dave", "alice", "carol"] { all.append(interaction(.likeAdded, next(), actor: liker, room: room, owner: owner)) }
        }
        let removed = String(format: "c0000000-0000-4000-8000-%06d%06d", 0, 0)
        all.append(interaction(.commentDeleted, next(), actor: "alice", room: "room-0", owner: "alice", comment: removed, author: "dave",
                               body: "comment 0 by dave on room-0"))
        all.append(interaction(.likeRemoved, next(), actor: "carol", room: "room-1", owner: "bob"))
        all.append(all.first { $0.kind == .likeAdded && $0.roomId == "room-4" && $0.actorId == "dave" }!)  // delivered twice
        let early = "c0000000-0000-4000-8000-999999999999"
        all.append(interaction(.commentDeleted, next(), actor: "dave", room: "room-2", owner: "carol", comment: early, author: "dave",
                               body: "gone before it came"))
        all.append(interaction(.commentCreated, next(), actor: "dave", room: "room-2", owner: "carol", comment: early, author: "dave",
                               body: "gone before it came"))
        all.append(remix(next(), source: "room-0", owner: "alice", fork: "fork-1", by: "dave"))
        all.append(remix(next(), source: "room-0", owner: "alice", fork: "fork-2", by: "bob"))
        all.append(remix(next(), source: "room-4", owner: "bob", fork: "fork-3", by: "bob"))
        return all
    }

    static func records(_ interactions: [RoomInteraction]) -> [KafkaProducerRecord] {
        interactions.map {
            KafkaProducerRecord(topic: Topics.roomInteractions, key: Array($0.key.utf8), value: try! ContractCoding.encode($0))
        }
    }

    /// Every row of the social tables, and the forks' rows in the catalog's, as JSON, sorted.
    static func snapshot(_ client: PostgresClient) async throws -> [String] {
        var result: [String] = []
        for table in socialTables {
            result += try await client.query("SELECT to_jsonb(t)::text AS j FROM \(table) t ORDER BY 1")
                .map { "\(table) " + (try $0.decode(String.self, "j")) }
        }
        for table in ["catalog_rooms", "catalog_versions"] {
            result += try await client.query("SELECT to_jsonb(t)::text AS j FROM \(table) t WHERE room_id LIKE 'fork-%' ORDER BY 1")
                .map { "\(table) " + (try $0.decode(String.self, "j")) }
        }
        return result
    }

    /// A snapshot without the comments written during the rebuild and room-5's counts, which they change.
    static func withoutLate(_ snapshot: [String]) -> [String] {
        snapshot.filter { !$0.contains("d0000000-") && !($0.hasPrefix("catalog_room_social") && $0.contains(#""room_id": "room-5""#)) }
    }

    static func count(_ client: PostgresClient, _ sql: String) async throws -> Int64 {
        try await client.query(sql).first?.decode(Int64.self, "n") ?? -1
    }

    @Test("rebuild social re-projects comments, likes, profiles, counts and notifications (read marks kept) exactly as the live consumer has them, repairs damage --dry-run names, while comments keep arriving; rebuild catalog keeps the remixes' forks")
    func rebuildSocial() async throws {
        let social = try #require(try RebuildTarget.named("social", environment: [:]))
        #expect(social.topics == [Topics.roomInteractions, Topics.roomTranscodeStatus] && social.groupID == "room-social")
        let catalog = try #require(try RebuildTarget.named("catalog", environment: [:]))
        #expect(catalog.topics.contains(Topics.roomInteractions) && catalog.group(of: Topics.roomInteractions) == "room-social"
                && catalog.group(of: Topics.roomTranscodeStatus) == "room-catalog")
        let topics = [Topics.roomTranscodeRequests, Topics.roomTranscodeStatus, Topics.roomUploads, Topics.roomInteractions]
        try await RebuildCommandTests.withStack(services: false) { stack in
            let (catalogRecords, _, _) = RebuildCatalogTests.rooms(12)
            try await stack.seedRooms(topics: topics, catalogRecords + Self.records(Self.interactions()))
            try await stack.skipTranscodeJobs()
            let port = Integration.freePort()
            stack.services.append(try ServiceProcess(executable: "transcode-worker", environment: stack.storelessWorkerEnvironment(port: port)))
            let log = { stack.services.last?.log ?? "" }
            #expect(await stack.caughtUp(group: "room-catalog", topics: catalog.topics.filter { $0 != Topics.roomInteractions }),
                    "the catalog was not projected: \(log())")
            #expect(await stack.caughtUp(group: "room-social", topics: social.topics), "the social layer was not projected: \(log())")

            // What the live consumer made of it: 4 comments on each of 5 rooms, one removed; three likes each, one taken back.
            #expect(try await Self.count(stack.client, "SELECT sum(comment_count) AS n FROM catalog_room_social") == 19)
            #expect(try await Self.count(stack.client, "SELECT sum(like_count) AS n FROM catalog_room_social") == 14)
            #expect(try await Self.count(stack.client, "SELECT remix_count::bigint AS n FROM catalog_room_social WHERE room_id = 'room-0'") == 2)
            #expect(try await Self.count(stack.client, "SELECT count(*) AS n FROM catalog_rooms WHERE room_id LIKE 'fork-%'") == 3)
            #expect(try await Self.count(stack.client, "SELECT count(*) AS n FROM catalog_notifications WHERE kind = 'transcode_ready'") > 0)
            // The owner reads two of her notifications: no topic holds that.
            _ = try await stack.client.execute("""
                UPDATE catalog_notifications SET read_at = '2026-12-01T10:00:00Z'
                WHERE notification_id IN (SELECT notification_id FROM catalog_notifications WHERE user_id = 'alice' ORDER BY 1 LIMIT 2)
                """)
            let clean = try await Self.snapshot(stack.client)
            #expect(clean.filter { $0.contains("\"read_at\": \"2026-12-01") }.count == 2)

            // Identical: exit 0, read marks included.
            let same = try await CLIProcess.run(["rebuild", "social", "--dry-run"], environment: stack.environment)
            #expect(same.status == 0, "\(same.stdout)\n\(same.stderr)")
            let sameCatalog = try await CLIProcess.run(["rebuild", "catalog", "--dry-run"], environment: stack.environment)
            #expect(sameCatalog.status == 0, "the forks are part of the catalog's rebuild: \(sameCatalog.stdout)\n\(sameCatalog.stderr)")

            // Damage: a lost comment, a wrong count, a notification gone, a tampered profile, a like no topic holds.
            let lost = String(format: "c0000000-0000-4000-8000-%06d%06d", 1, 2)
            _ = try await stack.client.execute("DELETE FROM catalog_comments WHERE comment_id = $1", [lost])
            _ = try await stack.client.execute("UPDATE catalog_room_social SET like_count = 99 WHERE room_id = 'room-2'")
            _ = try await stack.client.execute("DELETE FROM catalog_notifications WHERE kind = 'remix' AND room_id = 'fork-1'")
            _ = try await stack.client.execute("UPDATE catalog_profiles SET display_name = 'mallory' WHERE user_id = 'carol'")
            _ = try await stack.client.execute("INSERT INTO catalog_likes (room_id, user_id, created_at) VALUES ('room-5', 'ghost', now())")
            let remixNotification = Self.interactions().first { $0.forkRoomId == "fork-1" }!.interactionId
            let expected = RebuildCommandTests.normalized([
                #"catalog_comments added {"comment_id" : "\#(lost)"}"#,
                #"catalog_room_social changed {"room_id" : "room-2"}"#,
                #"catalog_notifications added {"notification_id" : "\#(remixNotification)"}"#,
                #"catalog_profiles changed {"user_id" : "carol"}"#,
                #"catalog_likes removed {"room_id" : "room-5", "user_id" : "ghost"}"#,
            ])
            let diff = try await CLIProcess.run(["rebuild", "social", "--dry-run", "--rows", "100"], environment: stack.environment)
            #expect(diff.status == 3, "\(diff.stderr)")
            #expect(try RebuildCommandTests.differences(diff) == expected, "\(diff.stdout)")
            #expect(try await !stack.schemaExists("rebuild_social"))

            // The rebuild, while comments keep arriving on room-5 (carol's).
            let writers = Task {
                for round in 0..<10 {
                    let comment = String(format: "d0000000-0000-4000-8000-%012d", round)
                    let late = Self.interaction(.commentCreated, 500 + round, actor: "dave", room: "room-5", owner: "carol",
                                                comment: comment, author: "dave", body: "late \(round)")
                    for result in await stack.producer.send(Self.records([late])) { _ = try result.get() }
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            let run = try await CLIProcess.run(["rebuild", "social", "--batch", "7"], environment: stack.environment)
            try await writers.value
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.lines.last?.contains(#""event":"swapped""#) == true, "\(run.stdout)")
            #expect(try await !stack.schemaExists("rebuild_social"))
            #expect(await stack.caughtUp(group: "room-social", topics: social.topics))
            // The late comments are counted once each, nothing applied twice or skipped at the hand-over.
            #expect(try await Self.count(stack.client, "SELECT comment_count::bigint AS n FROM catalog_room_social WHERE room_id = 'room-5'") == 14)
            #expect(try await Self.count(stack.client, "SELECT count(*) AS n FROM catalog_notifications WHERE comment_id LIKE 'd0000000-%'") == 10)
            #expect(Self.withoutLate(try await Self.snapshot(stack.client)) == Self.withoutLate(clean),
                    "the rebuilt social model is the clean one, read marks kept")

            // The catalog: a fork's rows lost are brought back by its rebuild, from the remix.
            _ = try await stack.client.execute("DELETE FROM catalog_versions WHERE room_id = 'fork-2'")
            _ = try await stack.client.execute("DELETE FROM catalog_rooms WHERE room_id = 'fork-2'")
            let catalogDiff = try await CLIProcess.run(["rebuild", "catalog", "--dry-run"], environment: stack.environment)
            #expect(catalogDiff.status == 3)
            #expect(try RebuildCommandTests.differences(catalogDiff) == RebuildCommandTests.normalized([
                #"catalog_rooms added {"room_id" : "fork-2"}"#, #"catalog_versions added {"version_id" : "fork-2-v0"}"#,
            ]), "\(catalogDiff.stdout)")
            let rebuilt = try await CLIProcess.run(["rebuild", "catalog"], environment: stack.environment)
            #expect(rebuilt.status == 0, "\(rebuilt.stderr)")
            #expect(Self.withoutLate(try await Self.snapshot(stack.client)) == Self.withoutLate(clean), "every fork is in the rebuilt catalog")

            // The fork is served as the app reads it.
            let token = JWTCodec(secret: RebuildCommandTests.secret).issue(userID: "erin", ttl: 3600)
            let answer = try await DemoHTTPClient().send("GET", service: "catalog",
                                                         url: "http://127.0.0.1:\(port)/rest/v1/rooms?id=eq.fork-2&select=id,remixed_from,title",
                                                         token: token).text
            #expect(answer.contains(#""remixed_from":"room-0""#) && answer.contains("Remix of room-0"), "\(answer)")
            let after = try await CLIProcess.run(["rebuild", "social", "--dry-run"], environment: stack.environment)
            #expect(after.status == 0, "\(after.stdout)")
        }
    }
}
