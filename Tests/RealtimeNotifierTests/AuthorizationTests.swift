import BackboneTestSupport
import Auth
import Contracts
import Foundation
import JSON
import Postgres
import Settings
import Testing
@testable import RealtimeNotifier

@Suite("Authorization on join", .serialized, .timeLimit(.minutes(3)), .enabled(if: Integration.isEnabled))
struct AuthorizationTests {
    func join(_ socket: RawSocket, _ channel: String, ref: String, accessToken: String? = nil) async throws -> [String: Any] {
        var payload: [String: Any] = ["config": [String: Any]()]
        if let accessToken { payload["access_token"] = accessToken }
        try await socket.send(json: ["topic": "realtime:\(channel)", "event": "phx_join", "payload": payload,
                                     "ref": ref, "join_ref": ref])
        let frame = try #require(try await socket.frame() as? [String: Any])
        return try #require(frame["payload"] as? [String: Any])
    }

    @Test("a socket open when its account is erased gets a system error and is closed (1008); the next one is refused")
    func erasedAccountSocketIsClosed() async throws {
        try await RealtimeHarness.with { harness in
            let leaver = try await RawSocket(url: harness.socketURL(user: "leaver"))
            defer { leaver.close() }
            let stayer = try await RawSocket(url: harness.socketURL(user: "stayer"))
            defer { stayer.close() }
            #expect(try await join(leaver, "user:leaver", ref: "1")["status"] as? String == "ok")
            #expect(try await join(stayer, "user:stayer", ref: "1")["status"] as? String == "ok")
            // What the notifier's erasure writes in its transaction; every instance reads it.
            _ = try await harness.database.execute("""
                INSERT INTO public.erased_users (service, user_hash, request_id, erased_at) VALUES ($1, $2, 'request-1', now())
                """, [RealtimeErasure.service, RevokedSubjects.hash("leaver")])
            let (sawError, closeCode) = try await leaver.untilClosed(timeout: 15)
            #expect(sawError)
            #expect(closeCode == 1008)
            // Another user's socket stays, and the erased user's token opens no new one.
            try await harness.broadcast("user:stayer", "note", ["text": .string("still here")])
            let frame = try #require(try await stayer.frame(timeout: 15) as? [String: Any])
            #expect(frame["event"] as? String == "broadcast")
            #expect(try await RawSocket.refusal(url: harness.socketURL(user: "leaver"))?.status == 401)
        }
    }

    @Test("another user's channel and a private room are refused; a public room and one's own private room are allowed")
    func joins() async throws {
        try await RealtimeHarness.with { harness in
            try await harness.transcodeStatus(RoomTranscodeStatus(roomId: "priv", versionId: "v", ownerUserId: "alice",
                                                                  visibility: .private, status: .queued, at: Date()))
            try await harness.transcodeStatus(RoomTranscodeStatus(roomId: "pub", versionId: "v", ownerUserId: "alice",
                                                                  visibility: .public, status: .queued, at: Date()))
            // A room whose upload just completed: known from its transcode request, before any status.
            try await harness.transcodeRequest(roomID: "ing", owner: "carol", visibility: .public)
            #expect(try await Integration.eventually {
                !(try await harness.database.query("SELECT 1 FROM realtime_rooms WHERE room_id = 'ing'").isEmpty)
            })
            try await harness.waitForSequence("room:pub", atLeast: 1)
            try await harness.waitForSequence("room:priv", atLeast: 1)

            let bob = try await RawSocket(url: harness.socketURL(user: "bob"))
            defer { bob.close() }
            let other = try await join(bob, "user:alice", ref: "1")
            #expect(other["status"] as? String == "error")
            #expect(((other["response"] as? [String: Any])?["reason"] as? String)?.contains("Unauthorized") == true)
            let privateRoom = try await join(bob, "room:priv", ref: "2")
            #expect(privateRoom["status"] as? String == "error")
            #expect(try await join(bob, "room:pub", ref: "3")["status"] as? String == "ok")
            #expect(try await join(bob, "room:ing", ref: "4")["status"] as? String == "ok")
            #expect(try await join(bob, "room:unknown", ref: "5")["status"] as? String == "error")
            #expect(try await join(bob, "user:bob", ref: "6")["status"] as? String == "ok")

            let alice = try await RawSocket(url: harness.socketURL(user: "alice"))
            defer { alice.close() }
            #expect(try await join(alice, "room:priv", ref: "1")["status"] as? String == "ok")

            let (forbidden, _) = try await harness.get("/realtime/v1/channels/room:priv/events?after=0", token: harness.token("bob"))
            #expect(forbidden == 403)
            let (unauthenticated, _) = try await harness.get("/realtime/v1/channels/room:priv/events?after=0", token: nil)
            #expect(unauthenticated == 401)
            let (allowed, _) = try await harness.get("/realtime/v1/channels/room:priv/events?after=0", token: harness.token("alice"))
            #expect(allowed == 200)
            let (health, _) = try await harness.get("/healthz", token: nil)
            #expect(health == 200)
        }
    }

    @Test("the owner joins room:{id} right after upload-init, before the room's announcement is processed, and receives its statuses; a stranger is refused a private uploading room")
    func roomFromTheFirstStep() async throws {
        try await RealtimeHarness.with { harness in
            let owner = try await RawSocket(url: harness.socketURL(user: "erin"))
            defer { owner.close() }
            // The join is sent first; upload-init's announcement arrives while it waits.
            async let joined = join(owner, "room:early", ref: "1")
            try await Task.sleep(for: .milliseconds(300))
            try await harness.uploadStarted(roomID: "early", owner: "erin", visibility: .private)
            #expect(try await joined["status"] as? String == "ok")
            try await harness.transcodeStatus(RoomTranscodeStatus(roomId: "early", versionId: "v-early", ownerUserId: "erin",
                                                                  visibility: .private, status: .queued, at: Date()))
            let frame = try #require(try await owner.frame(timeout: 15) as? [String: Any])
            let payload = try #require((frame["payload"] as? [String: Any])?["payload"] as? [String: Any])
            #expect(payload["version_id"] as? String == "v-early" && payload["status"] as? String == "queued")

            let stranger = try await RawSocket(url: harness.socketURL(user: "frank"))
            defer { stranger.close() }
            #expect(try await join(stranger, "room:early", ref: "1")["status"] as? String == "error")
        }
    }

    @Test("a socket opened with one of the project's publishable keys (sb_publishable_…, REALTIME_PUBLISHABLE_KEYS) is anonymous as with the anon key: public rooms only, the owner's session in the join opens their private room; another publishable key opens no socket; the setting refuses what is not one")
    func publishableKeySocket() async throws {
        let key = "sb_publishable_AbC123dEf456"
        try await RealtimeHarness.with(configure: { $0.publishableKeys = [key] }) { harness in
            try await harness.uploadStarted(roomID: "mine", owner: "alice", visibility: .private)
            try await harness.transcodeStatus(RoomTranscodeStatus(roomId: "open", versionId: "v", ownerUserId: "alice",
                                                                  visibility: .public, status: .queued, at: Date()))
            try await harness.waitForSequence("room:open", atLeast: 1)
            let url = "ws://127.0.0.1:\(harness.port())/realtime/v1/websocket?apikey=\(key)&vsn=1.0.0"
            let anonymous = try await RawSocket(url: url)
            defer { anonymous.close() }
            // Signed out, supabase-swift sends the key itself as the join's access_token.
            let refused = try await join(anonymous, "room:mine", ref: "1", accessToken: key)
            #expect(refused["status"] as? String == "error" && Self.reason(refused).hasPrefix("Unauthorized:"), "\(refused)")
            #expect(try await join(anonymous, "room:open", ref: "2", accessToken: key)["status"] as? String == "ok")
            let owner = try await join(anonymous, "room:mine", ref: "3", accessToken: harness.token("alice"))
            #expect(owner["status"] as? String == "ok", "\(owner)")

            let other = try #require(try await RawSocket.refusal(
                url: "ws://127.0.0.1:\(harness.port())/realtime/v1/websocket?apikey=sb_publishable_another&vsn=1.0.0"))
            #expect(other.status == 401, "\(other)")
        }
        var reader = EnvironmentReader(["REALTIME_PUBLISHABLE_KEYS": "\(key), sb_publishable_second"])
        #expect(RealtimeConfiguration.read(from: &reader).publishableKeys == [key, "sb_publishable_second"])
        try reader.validate()
        var wrong = EnvironmentReader(["REALTIME_PUBLISHABLE_KEYS": "eyJhbGciOiJIUzI1NiJ9.e30.x"])
        _ = RealtimeConfiguration.read(from: &wrong)
        #expect(throws: ConfigurationError.self) { try wrong.validate() }
    }

    static func reason(_ reply: [String: Any]) -> String {
        (reply["response"] as? [String: Any])?["reason"] as? String ?? ""
    }

    @Test("a socket opened with the project's anon key (as Supabase's SDKs open it) joins public rooms only; the user's session in the join's access_token opens the owner's private room and own channel; the anon key sent again (sign-out) closes them")
    func anonKeySocket() async throws {
        try await RealtimeHarness.with { harness in
            try await harness.uploadStarted(roomID: "mine", owner: "alice", visibility: .private)
            try await harness.transcodeStatus(RoomTranscodeStatus(roomId: "open", versionId: "v", ownerUserId: "alice",
                                                                  visibility: .public, status: .queued, at: Date()))
            try await harness.waitForSequence("room:open", atLeast: 1)
            #expect(try await Integration.eventually {
                !(try await harness.database.query("SELECT 1 FROM realtime_rooms WHERE room_id = 'mine'").isEmpty)
            })

            // Only the anon key; the Python client also sends it as the join's access_token.
            let anonymous = try await RawSocket(url: harness.anonSocketURL())
            defer { anonymous.close() }
            let refused = try await join(anonymous, "room:mine", ref: "1")
            #expect(refused["status"] as? String == "error")
            #expect(Self.reason(refused).hasPrefix("Unauthorized: You do not have permissions to read from this Channel topic: room:mine"),
                    "\(refused)")
            let withKey = try await join(anonymous, "room:mine", ref: "2", accessToken: harness.anonKey())
            #expect(withKey["status"] as? String == "error" && Self.reason(withKey).hasPrefix("Unauthorized:"))
            #expect(try await join(anonymous, "user:alice", ref: "3")["status"] as? String == "error")
            #expect(try await join(anonymous, "room:open", ref: "4")["status"] as? String == "ok")
            // Anonymous clients read; they do not write.
            try await anonymous.send(json: ["topic": "realtime:room:open", "event": "broadcast", "ref": "5", "join_ref": "4",
                                            "payload": ["type": "broadcast", "event": "note", "payload": ["text": "hi"]]])
            let write = try #require(try await anonymous.frame() as? [String: Any])
            #expect(Self.reason(try #require(write["payload"] as? [String: Any])).hasPrefix("Unauthorized:"), "\(write)")

            // The same socket kind with the owner's session in the join.
            let owner = try await RawSocket(url: harness.anonSocketURL(vsn: "2.0.0"))
            defer { owner.close() }
            try await owner.send(json: ["1", "1", "realtime:room:mine", "phx_join",
                                        ["config": [String: Any](), "access_token": harness.token("alice")]])
            #expect(try v2(try await owner.frame()).payload["status"] as? String == "ok")
            try await owner.send(json: ["2", "2", "realtime:user:alice", "phx_join",
                                        ["config": [String: Any](), "access_token": harness.token("alice")]])
            #expect(try v2(try await owner.frame()).payload["status"] as? String == "ok")
            // Another user's session opens neither; an expired or forged one is refused as before.
            try await owner.send(json: ["3", "3", "realtime:room:mine", "phx_join",
                                        ["config": [String: Any](), "access_token": harness.token("mallory")]])
            let close = try v2(try await owner.frame())  // the earlier join of the topic ends first
            #expect(close.event == "phx_close")
            let stranger = try v2(try await owner.frame()).payload
            #expect(stranger["status"] as? String == "error" && Self.reason(stranger) == "Unauthorized: private room", "\(stranger)")
            let expired = harness.codec.issue(userID: "alice", ttl: -120)
            try await owner.send(json: ["4", "4", "realtime:room:mine", "phx_join", ["config": [String: Any](), "access_token": expired]])
            let stale = try v2(try await owner.frame()).payload
            #expect(Self.reason(stale) == "Unauthorized: invalid access_token (expired)", "\(stale)")
            try await owner.send(json: ["5", "5", "realtime:room:mine", "phx_join",
                                        ["config": [String: Any](), "access_token": harness.token("alice")]])
            #expect(try v2(try await owner.frame()).payload["status"] as? String == "ok")
            // supabase-swift on sign-out: setAuth(anon key) → an access_token message with it.
            try await owner.send(json: ["5", "6", "realtime:room:mine", "access_token", ["access_token": harness.anonKey()]])
            let system = try v2(try await owner.frame())
            #expect(system.event == "system" && system.payload["status"] as? String == "error", "\(system)")
            #expect(try v2(try await owner.frame()).event == "phx_close")

            // A key of another project, or expired, opens no socket.
            let forged = JWTCodec(secret: "another-project-secret-0123456789")
                .sign(JWTClaims(sub: "", exp: Int64(Date().timeIntervalSince1970) + 600, role: "anon"))
            let foreign = try #require(try await RawSocket.refusal(
                url: "ws://127.0.0.1:\(harness.port())/realtime/v1/websocket?apikey=\(forged)&vsn=1.0.0"))
            #expect(foreign.status == 401 && foreign.body.contains("bad_signature"), "\(foreign)")
            let old = harness.codec.sign(JWTClaims(sub: "", exp: Int64(Date().timeIntervalSince1970) - 600, role: "anon"))
            let outdated = try #require(try await RawSocket.refusal(
                url: "ws://127.0.0.1:\(harness.port())/realtime/v1/websocket?apikey=\(old)&vsn=1.0.0"))
            #expect(outdated.status == 401 && outdated.body.contains("expired"), "\(outdated)")
        }
    }

    @Test("a refreshed access_token that is invalid ends the channel with a system error")
    func accessTokenRefresh() async throws {
        try await RealtimeHarness.with { harness in
            let socket = try await RawSocket(url: harness.socketURL(user: "dave"))
            defer { socket.close() }
            #expect(try await join(socket, "user:dave", ref: "1")["status"] as? String == "ok")
            try await socket.send(json: ["topic": "realtime:user:dave", "event": "access_token",
                                         "payload": ["access_token": harness.token("dave")], "ref": "2", "join_ref": "1"])
            try await socket.send(json: ["topic": "realtime:user:dave", "event": "access_token",
                                         "payload": ["access_token": "bad"], "ref": "3", "join_ref": "1"])
            let system = try #require(try await socket.frame() as? [String: Any])
            #expect(system["event"] as? String == "system")
            #expect((system["payload"] as? [String: Any])?["status"] as? String == "error")
            let close = try #require(try await socket.frame() as? [String: Any])
            #expect(close["event"] as? String == "phx_close")
        }
    }
}
