import Auth
import BackboneTestSupport
import Foundation
import Testing

/// CrowdRoom's social layer played as Flow C (seed `002_*` §2.3) against `backbone dev`'s one
/// origin, with Supabase's own Python clients: three users, a signed-out reader, the owner's
/// `user:{id}` channel.
@Suite("CrowdRoom's social layer through backbone dev's one origin", .serialized, .enabled(if: Integration.isEnabled),
       .timeLimit(.minutes(5)))
struct SocialFlowTests {
    static let clients = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Clients")

    @Test("Flow C: a user publishes a room, a second names herself, comments and likes, a third likes, takes it back and remixes it (a fork of hers, ready at once with its own copies); the owner hears comment_new, like_new and remix_created on user:{id} within a second and finds them in her notifications, marks one read; the comment's author is shown by name to a signed-out reader; counts are exact after a double like (23505) and an unlike; a stranger neither removes the comment nor reads the owner's notifications; the owner removes it; bad input is a 4xx with its code and stores nothing; too many writes are a 429 with Retry-After")
    func flowC() async throws {
        let offset = Integration.freePortOffset(for: DevStack.ports)
        let dev = try await DevStack.start(["--port-offset", String(offset)],
                                           environment: ["INGEST_SOCIAL_RATE_LIMIT_PER_SECOND": "2", "INGEST_SOCIAL_RATE_LIMIT_BURST": "20"])
        defer { dev.cleanUp() }
        let base = try #require(dev.value("APP_BASE_URL"), "dev.env names the one origin\n\(dev.log)")
        let codec = JWTCodec(secret: try #require(dev.value("JWT_SECRET")))
        let anonKey = codec.sign(JWTClaims(sub: "", exp: Int64(Date().timeIntervalSince1970) + 3600, role: "anon"))
        let (owner, fan, stranger) = ("social-owner", "social-fan", "social-stranger")
        let fixtures = Integration.packageRoot.appendingPathComponent("Tests/USDTests/Fixtures")
        let python = ProcessInfo.processInfo.environment["PYTHON"] ?? "python3"
        let arguments = [Self.clients.appendingPathComponent("social_flow.py").path, base, anonKey,
                         codec.issue(userID: owner, ttl: 600), codec.issue(userID: fan, ttl: 600), codec.issue(userID: stranger, ttl: 600),
                         fixtures.appendingPathComponent("roomscan.usdz").path, fixtures.appendingPathComponent("roomscan.roomplan.json").path]
        let (status, output) = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try Integration.run(python, arguments) }) }
        }
        #expect(status == 0, "\(output)\n\(dev.log.suffix(3000))")
        if let path = ProcessInfo.processInfo.environment["SOCIAL_FLOW_OUTPUT"] { try? output.write(toFile: path, atomically: true, encoding: .utf8) }
        let seen = (try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? [String: Any] ?? [:]
        let room = try #require(seen["room_id"] as? String, "\(output)")
        #expect(seen["published"] as? Bool == true)

        // The comment: trimmed, by the caller, on the room.
        let comment = try #require(seen["comment"] as? [String: Any], "\(output)")
        let commentID = try #require(comment["id"] as? String)
        #expect(comment["body"] as? String == "好漂亮的客厅！" && comment["author_id"] as? String == fan && comment["room_id"] as? String == room)
        #expect((seen["profile"] as? [[String: Any]])?.first?["display_name"] as? String == "Bo")

        // A double like is PostgREST's unique violation; ignore-duplicates answers nothing; the unlike answers the like.
        #expect((seen["like"] as? [[String: Any]])?.first?["user_id"] as? String == fan)
        #expect((seen["double_like"] as? [String: Any])?["code"] as? String == "23505", "\(seen["double_like"] ?? "")")
        #expect((seen["ignored_like"] as? [Any])?.isEmpty == true)
        #expect((seen["unlike"] as? [[String: Any]])?.first?["user_id"] as? String == stranger)
        #expect(seen["counts"] as? [[String: Int]] == [["like_count": 1, "comment_count": 1]], "\(seen["counts"] ?? "")")

        // The owner's pushes, within a second, with the ids that open the item.
        let pushes = seen["pushes"] as? [[String: Any]] ?? []
        let commentPush = pushes.first { $0["event"] as? String == "comment_new" }
        #expect(commentPush?["comment_id"] as? String == commentID && commentPush?["room_id"] as? String == room
                && commentPush?["actor_id"] as? String == fan && commentPush?["excerpt"] as? String == "好漂亮的客厅！", "\(pushes)")
        #expect(pushes.contains { $0["event"] as? String == "like_new" && $0["actor_id"] as? String == fan }, "\(pushes)")
        let commentSeconds = try #require(seen["comment_push_seconds"] as? Double, "comment_new heard: \(pushes)")
        let likeSeconds = try #require(seen["like_push_seconds"] as? Double, "like_new heard: \(pushes)")
        let remixSeconds = try #require(seen["remix_push_seconds"] as? Double, "remix_created heard: \(pushes)")
        #expect(commentSeconds < 1 && likeSeconds < 1 && remixSeconds < 1,
                "push latency: comment \(commentSeconds) s, like \(likeSeconds) s, remix \(remixSeconds) s")

        // The remix: a fork of the stranger's, ready at once with its own outputs, counted on the source.
        let remix = try #require(seen["remix"] as? [String: Any], "\(output)")
        let fork = try #require(remix["room_id"] as? String)
        #expect(remix["remixed_from"] as? String == room && remix["version_id"] as? String != nil)
        let forkRow = (seen["fork"] as? [[String: Any]])?.first
        #expect(forkRow?["owner_id"] as? String == stranger && forkRow?["title"] as? String == "我的客厅"
                && forkRow?["remixed_from"] as? String == room && forkRow?["state"] as? String == "published", "\(forkRow ?? [:])")
        #expect(forkRow?["current_version_id"] as? String == remix["version_id"] as? String)
        #expect((forkRow?["manifest_url"] as? String)?.contains("rooms/\(fork)/") == true, "the fork's outputs are its own copies")
        let forkVersion = forkRow?["current_version"] as? [String: Any]
        #expect(forkVersion?["status"] as? String == "ready" && (forkVersion?["glb_urls"] as? [String: Any])?.isEmpty == false,
                "\(forkVersion ?? [:])")
        #expect(seen["source_remix_count"] as? [[String: Int]] == [["remix_count": 1]])
        let remixPush = pushes.first { $0["event"] as? String == "remix_created" }
        #expect(remixPush?["room_id"] as? String == fork && remixPush?["remixed_from"] as? String == room
                && remixPush?["actor_id"] as? String == stranger, "\(pushes)")
        let remixPrivate = seen["remix_private"] as? [String: Any]
        #expect(remixPrivate?["status"] as? Int == 404 && remixPrivate?["code"] as? String == "NOT_FOUND", "\(remixPrivate ?? [:])")

        // Her notifications: the comment, the like and the transcode, none of her own doing; one marked read.
        let notes = seen["notifications"] as? [[String: Any]] ?? []
        #expect(Set(notes.compactMap { $0["kind"] as? String }) == ["comment", "like", "remix", "transcode_ready"], "\(notes)")
        #expect(notes.allSatisfy { $0["user_id"] as? String == owner && $0["actor_id"] as? String != owner })
        let noted = notes.first { $0["kind"] as? String == "comment" }
        #expect(noted?["comment_id"] as? String == commentID && noted?["id"] as? String == commentPush?["notification_id"] as? String)
        let marked = (seen["marked"] as? [[String: Any]])?.first
        #expect(marked?["read_at"] as? String != nil && marked?["id"] as? String == noted?["id"] as? String)
        #expect(!(seen["unread"] as? [[String: Any]] ?? []).contains { $0["id"] as? String == noted?["id"] as? String })
        // A stranger's PATCH of her notifications (marking one read, unmarking the read one) changes no row.
        #expect((seen["stranger_patch"] as? [Any])?.isEmpty == true, "\(seen["stranger_patch"] ?? "")")
        #expect((seen["stranger_unmark"] as? [Any])?.isEmpty == true, "\(seen["stranger_unmark"] ?? "")")
        let after = (seen["owner_after_stranger"] as? [[String: Any]] ?? []).map { "\($0["id"] ?? "") \($0["read_at"] ?? "null")" }
        let before = (seen["owner_before_stranger"] as? [[String: Any]] ?? []).map { "\($0["id"] ?? "") \($0["read_at"] ?? "null")" }
        #expect(after.count == 2 && after == before, "the owner's notifications after the stranger's PATCH: \(after), before: \(before)")

        // A signed-out reader: the comment with its author's name, no notification, no private room.
        let shown = (seen["anonymous_comments"] as? [[String: Any]])?.first
        #expect(shown?["id"] as? String == commentID)
        #expect((shown?["author"] as? [String: Any])?["display_name"] as? String == "Bo", "\(shown ?? [:])")
        #expect((shown?["author"] as? [String: Any])?["avatar_path"] as? String == "avatars/bo-2.png", "the PATCH reached the embed")
        #expect((seen["patched"] as? [[String: Any]])?.first?["avatar_path"] as? String == "avatars/bo-2.png")
        #expect((seen["patched_other"] as? [Any])?.isEmpty == true, "another user's profile is not hers to change")
        #expect((seen["anonymous_notifications"] as? [Any])?.isEmpty == true)
        #expect((seen["anonymous_private"] as? [Any])?.isEmpty == true)

        // The stranger removes nothing and reads nothing of the owner's.
        #expect((seen["stranger_delete"] as? [Any])?.isEmpty == true)
        #expect((seen["stranger_notifications"] as? [Any])?.isEmpty == true)
        #expect((seen["comment_after_stranger"] as? [Any])?.count == 1)

        // Bad input: a 4xx code and a message each, nothing stored.
        let bad = seen["bad"] as? [String: [String: Any]] ?? [:]
        let expected = ["empty": "INVALID_FIELD", "long": "INVALID_FIELD", "control": "INVALID_FIELD", "unknown_room": "NOT_FOUND",
                        "private_room": "NOT_FOUND", "other_author": "FORBIDDEN", "other_profile": "FORBIDDEN", "like_private": "NOT_FOUND"]
        for (name, code) in expected {
            #expect(bad[name]?["code"] as? String == code, "\(name): \(bad[name] ?? [:])")
            #expect((bad[name]?["message"] as? String)?.isEmpty == false, "\(name) says why")
        }
        #expect(seen["counts_after_bad"] as? [[String: Int]] == [["like_count": 1, "comment_count": 1]])
        #expect(seen["comments_after_bad"] as? Int == 1)

        // The owner removes the comment on her room; the count follows.
        #expect((seen["owner_delete"] as? [[String: Any]])?.first?["id"] as? String == commentID)
        #expect((seen["counts_after_delete"] as? [[String: Int]])?.first?["comment_count"] == 0)

        // Too many writes.
        let limited = seen["rate_limited"] as? [String: Any]
        #expect(limited?["status"] as? Int == 429 && limited?["retry_after"] as? String != nil, "\(limited ?? [:])")
        #expect(((limited?["body"] as? [String: Any])?["error"] as? [String: Any])?["code"] as? String == "RATE_LIMITED")

        let exit = await dev.interrupt()
        #expect(exit == 0, "\(dev.log.suffix(2000))")
    }
}
