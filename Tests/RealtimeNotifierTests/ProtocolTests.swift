import Contracts
import Foundation
import JSON
import Testing
@testable import RealtimeNotifier

@Suite("Phoenix frames and join options")
struct ProtocolTests {
    func object(_ text: String) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("a v1 frame from a client is read with its refs, topic, event and payload")
    func decodesV1() throws {
        let message = try PhoenixMessage.decode(
            #"{"topic":"realtime:room:1","event":"phx_join","payload":{"config":{}},"ref":"3","join_ref":"3"}"#, serializer: .v1)
        #expect(message == PhoenixMessage(joinRef: "3", ref: "3", topic: "realtime:room:1", event: "phx_join",
                                          payload: .object(["config": .object([:])])))
    }

    @Test("a v2 frame is a five-element array; numeric refs are kept as text")
    func decodesV2() throws {
        let message = try PhoenixMessage.decode(#"["1",2,"phoenix","heartbeat",{}]"#, serializer: .v2)
        #expect(message.joinRef == "1" && message.ref == "2" && message.topic == "phoenix" && message.event == "heartbeat")
    }

    @Test("frames that are not Phoenix messages are refused with a reason")
    func refusesMalformed() {
        #expect(throws: MalformedFrame.self) { try PhoenixMessage.decode("not json", serializer: .v1) }
        #expect(throws: MalformedFrame.self) { try PhoenixMessage.decode(#"["1","2","t"]"#, serializer: .v2) }
        #expect(throws: MalformedFrame.self) { try PhoenixMessage.decode(#"{"topic":1,"event":"x"}"#, serializer: .v1) }
        #expect(throws: MalformedFrame.self) { try PhoenixMessage.decode(#"{"topic":"a","event":"b"}"#, serializer: .v2) }
    }

    @Test("a v1 broadcast carries exactly topic, event, payload and a null ref")
    func v1BroadcastHasNullRef() throws {
        let text = PhoenixMessage.broadcast(topic: "realtime:room:1", event: "ready", payload: .object(["a": .number(1)]),
                                            seq: 7, replayed: true).encode(.v1)
        let frame = try object(text)
        #expect(Set(frame.keys) == ["topic", "event", "payload", "ref"])
        #expect(frame["ref"] is NSNull)
        let payload = try #require(frame["payload"] as? [String: Any])
        #expect(payload["type"] as? String == "broadcast" && payload["event"] as? String == "ready")
        let meta = try #require(payload["meta"] as? [String: Any])
        #expect(meta["id"] as? String == "7" && meta["replayed"] as? Bool == true)
    }

    @Test("the seed's handler code finds msg.payload[\"status\"], [\"version_id\"], [\"error\"] beside type, event and payload (supabase-swift hands it the message's payload), and payload.payload is unchanged")
    func seedHandlerKeys() throws {
        let inner: JSONValue = .object(["status": .string("failed"), "version_id": .string("v-1"), "error": .string("ROOM_TRANSCODE_FAILED"),
                                        "stage": .string("layering")])
        let frame = try object(PhoenixMessage.broadcast(topic: "realtime:room:1", event: "failed", payload: inner, seq: 3,
                                                        replayed: false).encode(.v1))
        let msgPayload = try #require(frame["payload"] as? [String: Any])
        #expect(msgPayload["status"] as? String == "failed")
        #expect(msgPayload["version_id"] as? String == "v-1")
        #expect(msgPayload["error"] as? String == "ROOM_TRANSCODE_FAILED")
        #expect(msgPayload["stage"] == nil && msgPayload["type"] as? String == "broadcast" && msgPayload["event"] as? String == "failed")
        let nested = try #require(msgPayload["payload"] as? [String: Any])
        #expect(nested["status"] as? String == "failed" && nested["stage"] as? String == "layering")
    }

    @Test("a v2 broadcast is [null, null, topic, broadcast, payload]; a non-object payload is wrapped")
    func v2Broadcast() throws {
        let text = PhoenixMessage.broadcast(topic: "realtime:user:u", event: "x", payload: .number(3), seq: 1, replayed: false).encode(.v2)
        let frame = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Any])
        #expect(frame.count == 5 && frame[0] is NSNull && frame[1] is NSNull)
        #expect(frame[2] as? String == "realtime:user:u" && frame[3] as? String == "broadcast")
        let payload = try #require(frame[4] as? [String: Any])
        #expect((payload["payload"] as? [String: Any])?["value"] as? Int == 3)
        #expect((payload["meta"] as? [String: Any])?["replayed"] == nil)
        #expect(payload["status"] == nil && payload["value"] == nil)
    }

    @Test("a system message has all four keys and a null ref")
    func systemMessage() throws {
        let frame = try object(PhoenixMessage.system(topic: "realtime:room:1", channel: "room:1", status: "error", message: "m").encode(.v1))
        let payload = try #require(frame["payload"] as? [String: Any])
        #expect(Set(payload.keys) == ["extension", "status", "message", "channel"])
        #expect(frame["ref"] is NSNull && frame["event"] as? String == "system")
    }

    @Test("join options are read leniently: string booleans, since in ms, afterId")
    func joinOptions() {
        let payload: JSONValue = .object([
            "config": .object(["broadcast": .object(["self": .string("true"), "ack": .bool(true),
                                                     "replay": .object(["since": .string("1700000000000")])]),
                               "private": .string("false")]),
            "access_token": .string("tok"),
        ])
        let options = JoinOptions(payload: payload)
        #expect(options.receiveOwnBroadcasts && options.acknowledgeBroadcasts && !options.isPrivate)
        #expect(options.replay == .since(milliseconds: 1_700_000_000_000))
        #expect(options.accessToken == "tok")
        let after = JoinOptions(payload: .object(["config": .object(["broadcast": .object(["replay": .object(["afterId": .string("42")])])])]))
        #expect(after.replay == .afterSeq(42))
        #expect(JoinOptions(payload: .object([:])) == JoinOptions())
    }

    @Test("topics map to channels; bare realtime: and foreign topics do not")
    func channelNames() {
        #expect(ChannelName(topic: "realtime:room:123")?.kind == .room("123"))
        #expect(ChannelName(topic: "realtime:user:u1")?.kind == .user("u1"))
        #expect(ChannelName(topic: "realtime:lobby")?.kind == .other)
        #expect(ChannelName(topic: "realtime:") == nil)
        #expect(ChannelName(topic: "room:1") == nil)
        #expect(ChannelName(topic: "realtime:room:")?.kind == .other)
    }

    @Test("vsn selects the serializer; missing means 1.0.0; unknown is refused")
    func serializers() {
        #expect(PhoenixSerializer(vsn: nil) == .v1)
        #expect(PhoenixSerializer(vsn: "2.0.0") == .v2)
        #expect(PhoenixSerializer(vsn: "3.0.0") == nil)
    }

    @Test("a transcode status becomes the same event on the room and on its owner's channel")
    func transcodeStatusFanOut() throws {
        let status = RoomTranscodeStatus(roomId: "r1", versionId: "v1", ownerUserId: "u1", visibility: .public, status: .ready,
                                         at: Date(timeIntervalSince1970: 0))
        let input = try ChannelSequencer.input(status: status)
        #expect(input.drafts.map(\.channel.name) == ["room:r1", "user:u1"])
        #expect(input.drafts.allSatisfy { $0.event == "ready" })
        #expect(input.room == .init(roomID: "r1", ownerUserID: "u1", visibility: .public))
        var progress = status
        progress.status = .transcoding
        #expect(try ChannelSequencer.input(status: progress).drafts[0].event == "transcode_progress")
    }
}
