@testable import BackboneCLI
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import Kafka
import Postgres
import ServiceLogging
import Testing

/// The social projection (the transcode-worker's `room-social` group) killed with SIGKILL
/// mid-stream, twice, while comments, removals and likes keep arriving: after each restart it
/// goes on from the offsets it committed with its rows, so every count and notification is
/// exact — nothing applied twice, nothing skipped — and the model is what a rebuild from the
/// topic makes of it.
@Suite("The social projection killed mid-stream", .serialized, .timeLimit(.minutes(4)), .enabled(if: Integration.isEnabled))
struct SocialCrashTests {
    typealias Social = RebuildSocialTests

    @Test("SIGKILL of the transcode-worker twice while 600 comments, removals and likes arrive: after the restarts the counts, comments, likes and notifications are exact and rebuild social --dry-run finds the model identical")
    func killedMidStream() async throws {
        let topics = [Topics.roomTranscodeRequests, Topics.roomTranscodeStatus, Topics.roomUploads, Topics.roomInteractions]
        try await RebuildCommandTests.withStack(services: false) { stack in
            try await stack.seedRooms(topics: topics, RebuildCatalogTests.rooms(3).records)
            try await stack.skipTranscodeJobs()
            let env = stack.storelessWorkerEnvironment(port: Integration.freePort(), ["KAFKA_SESSION_TIMEOUT_MS": "6000"])
            var worker = try ServiceProcess(executable: "transcode-worker", environment: env)
            defer { worker.terminate() }

            // room-0 is alice's, room-1 bob's (RebuildCatalogTests.rooms): comments on the first
            // (every fifth removed again by its author), likes of users of their own on the second.
            var comments = 0, removed = 0, likes = 0
            var records: [RoomInteraction] = []
            for i in 0..<600 {
                let author = "fan-\(i % 20)", comment = String(format: "e0000000-0000-4000-8000-%012d", i)
                switch i % 3 {
                case 0, 1:
                    records.append(Social.interaction(.commentCreated, 10_000 + i, actor: author, room: "room-0", owner: "alice",
                                                      comment: comment, author: author, body: "comment \(i)"))
                    comments += 1
                    if i % 5 == 0 {
                        records.append(Social.interaction(.commentDeleted, 20_000 + i, actor: author, room: "room-0", owner: "alice",
                                                          comment: comment, author: author, body: "comment \(i)"))
                        removed += 1
                    }
                default:
                    records.append(Social.interaction(.likeAdded, 10_000 + i, actor: "liker-\(i)", room: "room-1", owner: "bob"))
                    likes += 1
                }
            }
            let producing = Task {
                for start in stride(from: 0, to: records.count, by: 10) {
                    let chunk = Array(records[start..<min(start + 10, records.count)])
                    for result in await stack.producer.send(Social.records(chunk)) { _ = try result.get() }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            // Killed twice once it is under way, each time once it has committed some of the stream.
            var committed: Int64 = 0
            for round in 1...2 {
                let reached = await Integration.eventually(timeout: .seconds(60), every: .milliseconds(20)) {
                    committed = (try? await stack.client.query("""
                        SELECT coalesce(sum(next_offset), 0)::bigint AS n FROM consumer_offsets WHERE group_id = 'room-social' AND topic = $1
                        """, [Topics.roomInteractions]).first?.decode(Int64.self, "n")) ?? 0
                    return committed >= Int64(round * 150)
                }
                #expect(reached, "round \(round): the social projection committed only \(committed) records: \(worker.log.suffix(2000))")
                worker.kill()
                try await Task.sleep(for: .milliseconds(300))
                worker = try ServiceProcess(executable: "transcode-worker", environment: env)
            }
            try await producing.value
            #expect(await stack.caughtUp(group: "room-social", topics: [Topics.roomInteractions, Topics.roomTranscodeStatus]),
                    "the restarted worker did not catch up: \(worker.log.suffix(2000))")

            func count(_ sql: String) async throws -> Int64 { try await Social.count(stack.client, sql) }
            #expect(try await count("SELECT comment_count::bigint AS n FROM catalog_room_social WHERE room_id = 'room-0'") == Int64(comments - removed))
            #expect(try await count("SELECT like_count::bigint AS n FROM catalog_room_social WHERE room_id = 'room-1'") == Int64(likes))
            #expect(try await count("SELECT count(*) AS n FROM catalog_comments WHERE room_id = 'room-0' AND deleted_at IS NULL")
                    == Int64(comments - removed))
            #expect(try await count("SELECT count(*) AS n FROM catalog_likes WHERE room_id = 'room-1'") == Int64(likes))
            #expect(try await count("SELECT count(*) AS n FROM catalog_notifications WHERE kind = 'comment' AND user_id = 'alice'")
                    == Int64(comments - removed))
            #expect(try await count("SELECT count(*) AS n FROM catalog_notifications WHERE kind = 'like' AND user_id = 'bob'") == Int64(likes))
            let check = try await CLIProcess.run(["rebuild", "social", "--dry-run"], environment: stack.environment)
            #expect(check.status == 0, "\(check.stdout)\n\(check.stderr)")
        }
    }
}
