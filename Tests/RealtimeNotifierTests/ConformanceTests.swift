import Auth
import BackboneTestSupport
import Contracts
import Foundation
import JSON
import ServiceRuntime
import Testing
@testable import RealtimeNotifier

/// Frames of the v2 serializer, as arrays.
func v2(_ value: Any) throws -> (joinRef: Any, ref: Any, topic: String, event: String, payload: [String: Any]) {
    let array = try #require(value as? [Any])
    try #require(array.count == 5)
    return (array[0], array[1], try #require(array[2] as? String), try #require(array[3] as? String),
            try #require(array[4] as? [String: Any]))
}

func joinV2(_ socket: RawSocket, _ topic: String, ref: String, config: [String: Any] = [:]) async throws {
    try await socket.send(json: [ref, ref, topic, "phx_join", ["config": config]])
}

@Suite("Conformance with real clients", .serialized, .timeLimit(.minutes(3)),
       .enabled(if: Integration.isEnabled))
struct ConformanceTests {
    @Test("the Python realtime client (v1) subscribes to room:123 and receives a ready broadcast produced to Kafka")
    func pythonClientReceivesReady() async throws {
        try await RealtimeHarness.with { harness in
            // The room becomes known (public) through its transcode status.
            try await harness.transcodeStatus(RoomTranscodeStatus(roomId: "123", versionId: "v1", ownerUserId: "owner",
                                                                  visibility: .public, status: .queued, at: Date()))
            try await harness.waitForSequence("room:123", atLeast: 1)
            let listener = try PythonClient(script: "supabase_listener.py", arguments: [
                "http://127.0.0.1:\(harness.port())/realtime/v1", harness.token("viewer"), "room:123", "ready", "1"])
            let status = try await listener.next()
            #expect(status["status"] as? String == "SUBSCRIBED", "\(status)")
            try await harness.transcodeStatus(RoomTranscodeStatus(roomId: "123", versionId: "v1", ownerUserId: "owner",
                                                                  visibility: .public, status: .ready, manifestKey: "m.json", at: Date()))
            let received = try await listener.next(timeout: .seconds(90))
            let broadcast = try #require(received["broadcast"] as? [String: Any])
            #expect(broadcast["event"] as? String == "ready")
            #expect((broadcast["payload"] as? [String: Any])?["manifestKey"] as? String == "m.json")
            // The keys the app's Swift code reads (seed 002 §6.2).
            #expect((broadcast["payload"] as? [String: Any])?["version_id"] as? String == "v1")
            #expect((broadcast["payload"] as? [String: Any])?["status"] as? String == "ready")
            #expect((broadcast["meta"] as? [String: Any])?["id"] as? String == "2")
            #expect(await listener.waitForExit() == 0)
        }
    }

    @Test("the Python realtime client as Supabase's SDKs use it — the anon key as the socket's apikey, set_auth with the user's ES256 Supabase session — joins room:{id} right after upload-init and receives queued, transcoding and ready with the version_id; with the anon key alone, or an expired session, the owner's room is refused")
    func sdkAnonKeyAndSession() async throws {
        let witness = try TokenWitness.shared()
        let tokens = TokenVerificationSettings(keySet: .file(try witness.keySetFile()), issuer: TokenWitness.issuer,
                                               audience: TokenWitness.audience)
        try await RealtimeHarness.with(secret: TokenWitness.secret, tokens: tokens) { harness in
            let base = "http://127.0.0.1:\(harness.port())/realtime/v1"
            let anon = try witness.token("anon")
            let owner = try witness.subject("es256")
            func listener(_ session: String) throws -> PythonClient {
                try PythonClient(script: Integration.witness("room_listener.py"), arguments: [base, anon, session, "room:sdk", "90"])
            }
            // upload-init's announcement, then the app's join at once (the notifier waits for the announcement).
            try await harness.uploadStarted(roomID: "sdk", owner: owner, visibility: .private)
            let app = try listener(try witness.token("es256"))
            let subscribed = try await app.next()
            #expect(subscribed["status"] as? String == "SUBSCRIBED", "\(subscribed)")

            for status in [RoomVersionStatus.queued, .transcoding, .ready] {
                try await harness.transcodeStatus(RoomTranscodeStatus(roomId: "sdk", versionId: "v-sdk", ownerUserId: owner,
                                                                      visibility: .private, status: status,
                                                                      manifestKey: status == .ready ? "m.json" : nil, at: Date()))
            }
            var received: [[String: Any]] = []
            while received.last?["event"] as? String != "ready" {
                received.append(try #require(try await app.next(timeout: .seconds(90))["broadcast"] as? [String: Any]))
            }
            let statuses = received.compactMap { ($0["payload"] as? [String: Any])?["status"] as? String }
            #expect(statuses == ["queued", "transcoding", "ready"], "\(received)")
            #expect(received.allSatisfy { ($0["payload"] as? [String: Any])?["version_id"] as? String == "v-sdk" }, "\(received)")
            #expect(await app.waitForExit() == 0, "\(app.standardError)")

            // Nobody signed in: the anon key alone (also sent as the join's access_token).
            let stranger = try listener("-")
            let refused = try await stranger.next()
            #expect(refused["status"] as? String == "CHANNEL_ERROR", "\(refused)")
            #expect((refused["error"] as? String)?.contains("Unauthorized: You do not have permissions to read from this Channel topic: room:sdk") == true,
                    "\(refused)")
            #expect(await stranger.waitForExit() == 0, "\(stranger.standardError)")

            let expired = try listener(try witness.token("expired"))
            let stale = try await expired.next()
            #expect(stale["status"] as? String == "CHANNEL_ERROR", "\(stale)")
            #expect((stale["error"] as? String)?.contains("invalid access_token (expired)") == true, "\(stale)")
            #expect(await expired.waitForExit() == 0, "\(expired.standardError)")
        }
    }

    @Test("a backend announces remix_created through the REST broadcast endpoint and the owner's client receives it")
    func restBroadcastReachesClient() async throws {
        try await RealtimeHarness.with { harness in
            let listener = try PythonClient(script: "supabase_listener.py", arguments: [
                "http://127.0.0.1:\(harness.port())/realtime/v1", harness.token("owner"), "user:owner", "remix_created", "1"])
            let status = try await listener.next()
            #expect(status["status"] as? String == "SUBSCRIBED", "\(status)")
            let service = harness.codec.issue(userID: "remix-editor", ttl: 600, role: "service")
            let body = Data(#"{"messages":[{"topic":"user:owner","event":"remix_created","payload":{"room_id":"r1","remix_id":"x9"}}]}"#.utf8)
            // A user token may not announce; a topic that is no channel is refused; malformed JSON is named.
            #expect(try await harness.get("/realtime/v1/api/broadcast", token: harness.token("owner"), method: "POST", body: body).0 == 403)
            let badTopic = try await harness.get("/realtime/v1/api/broadcast", token: service, method: "POST",
                                                 body: Data(#"{"messages":[{"topic":"lobby","event":"x","payload":{}}]}"#.utf8))
            #expect(badTopic.0 == 400 && String(decoding: badTopic.1, as: UTF8.self).contains("INVALID_FIELD"))
            let malformed = try await harness.get("/realtime/v1/api/broadcast", token: service, method: "POST", body: Data("{".utf8))
            #expect(malformed.0 == 400 && String(decoding: malformed.1, as: UTF8.self).contains("INVALID_JSON"))
            #expect(try await harness.get("/realtime/v1/api/broadcast", token: service, method: "POST", body: body).0 == 202)
            let received = try await listener.next(timeout: .seconds(90))
            let broadcast = try #require(received["broadcast"] as? [String: Any])
            #expect(broadcast["event"] as? String == "remix_created")
            #expect((broadcast["payload"] as? [String: Any])?["remix_id"] as? String == "x9")
            #expect(await listener.waitForExit() == 0)
        }
    }

    @Test("v2 frames: join reply with postgres_changes, heartbeat with the same ref, null refs on broadcasts, re-join closes the old join, leave replies then closes")
    func rawV2Protocol() async throws {
        try await RealtimeHarness.with { harness in
            let socket = try await RawSocket(url: harness.socketURL(user: "u1", vsn: "2.0.0"))
            defer { socket.close() }
            try await joinV2(socket, "realtime:user:u1", ref: "1")
            let reply = try v2(try await socket.frame())
            #expect(reply.joinRef as? String == "1" && reply.ref as? String == "1" && reply.event == "phx_reply")
            #expect(reply.payload["status"] as? String == "ok")
            #expect((reply.payload["response"] as? [String: Any])?["postgres_changes"] is [Any])
            try await harness.waitForSubscriptions(1)

            try await socket.send(json: [NSNull(), "7", "phoenix", "heartbeat", [String: Any]()])
            let beat = try v2(try await socket.frame())
            #expect(beat.ref as? String == "7" && beat.topic == "phoenix" && beat.payload["status"] as? String == "ok")

            try await harness.broadcast("user:u1", "comment_new", ["text": .string("hi")])
            let pushed = try v2(try await socket.frame())
            #expect(pushed.joinRef is NSNull && pushed.ref is NSNull && pushed.event == "broadcast")
            #expect(pushed.payload["event"] as? String == "comment_new")
            #expect((pushed.payload["meta"] as? [String: Any])?["id"] as? String == "1")

            try await joinV2(socket, "realtime:user:u1", ref: "2")
            let closeOld = try v2(try await socket.frame())
            #expect(closeOld.event == "phx_close" && closeOld.joinRef as? String == "1")
            let rejoined = try v2(try await socket.frame())
            #expect(rejoined.event == "phx_reply" && rejoined.ref as? String == "2" && rejoined.payload["status"] as? String == "ok")

            try await socket.send(json: ["2", "3", "realtime:user:u1", "phx_leave", [String: Any]()])
            let leaveReply = try v2(try await socket.frame())
            #expect(leaveReply.event == "phx_reply" && leaveReply.ref as? String == "3" && leaveReply.payload["status"] as? String == "ok")
            let closed = try v2(try await socket.frame())
            #expect(closed.event == "phx_close" && closed.joinRef as? String == "2" && closed.payload.isEmpty)
        }
    }

    @Test("v1 broadcasts carry ref: null; errors are clear for unmatched topics and malformed frames; bad apikeys are refused before the upgrade")
    func rawV1AndErrors() async throws {
        try await RealtimeHarness.with { harness in
            let missing = try await RawSocket.refusal(url: "ws://127.0.0.1:\(harness.port())/realtime/v1/websocket?vsn=1.0.0")
            #expect(missing?.status == 401 && missing?.body.contains("apikey") == true)
            let forged = try await RawSocket.refusal(url: "ws://127.0.0.1:\(harness.port())/realtime/v1/websocket?apikey=abc.def.ghi")
            #expect(forged?.status == 401)

            let socket = try await RawSocket(url: harness.socketURL(user: "u2"))
            defer { socket.close() }
            try await socket.send(json: ["topic": "realtime:", "event": "phx_join", "payload": [String: Any](), "ref": "1", "join_ref": "1"])
            let unmatched = try #require(try await socket.frame() as? [String: Any])
            let unmatchedPayload = try #require(unmatched["payload"] as? [String: Any])
            #expect(unmatchedPayload["status"] as? String == "error")
            #expect((unmatchedPayload["response"] as? [String: Any])?["reason"] as? String == "unmatched topic")

            try await socket.send("{not json")
            let malformed = try #require(try await socket.frame() as? [String: Any])
            let reason = ((malformed["payload"] as? [String: Any])?["response"] as? [String: Any])?["reason"] as? String
            #expect(reason?.hasPrefix("malformed frame") == true)

            try await socket.send(json: ["topic": "realtime:user:u2", "event": "phx_join", "payload": ["config": [String: Any]()],
                                         "ref": "2", "join_ref": "2"])
            _ = try await socket.frame()
            try await harness.waitForSubscriptions(1)
            try await harness.broadcast("user:u2", "remix_created", ["remixId": .string("r9")])
            let frame = try #require(try await socket.frame() as? [String: Any])
            #expect(frame["event"] as? String == "broadcast")
            #expect(frame.keys.contains("ref") && frame["ref"] is NSNull)
        }
    }
}
