import BackboneTestSupport
import Contracts
import Foundation
import Kafka
import Postgres
import Testing
@testable import RealtimeNotifier

/// A remix's fork (`remix_created` on `room.interactions.v1`) is a room the notifier learns
/// from the bus, as it learns other rooms from their first request: its `room:{fork}` channel
/// is joinable at once, and its statuses reach whoever joined it.
@Suite("Remix forks on the realtime channels", .serialized, .timeLimit(.minutes(3)), .enabled(if: Integration.isEnabled))
struct ForkRoomTests {
    static func remix(source: String, owner: String, fork: String, remixer: String) -> RoomInteraction {
        var remix = RoomInteraction(interactionId: UUID().uuidString.lowercased(), kind: .remixCreated, actorId: remixer,
                                    roomId: source, roomOwnerId: owner, roomVisibility: .public, at: Date())
        remix.forkRoomId = fork
        remix.forkVersionId = "v-\(fork)"
        remix.sourceVersionId = "v-\(source)"
        remix.title = "Remix: kitchen"
        remix.outputKeys = ["rooms/\(fork)/v-\(fork)/manifest.json"]
        return remix
    }

    @Test("the remixer, the source's owner and a signed-out reader join room:{fork} of a remix (a public room of the remixer); the remixer hears its statuses; a remix of one's own room is a room too")
    func forkRoomChannelIsJoinable() async throws {
        try await RealtimeHarness.with { harness in
            let authorization = AuthorizationTests()
            try await harness.transcodeRequest(roomID: "source", owner: "olive", visibility: .public)
            for remix in [Self.remix(source: "source", owner: "olive", fork: "fork-1", remixer: "rami"),
                          Self.remix(source: "source", owner: "olive", fork: "fork-own", remixer: "olive")] {
                _ = try await harness.producer.send(KafkaProducerRecord(topic: Topics.roomInteractions, key: Array(remix.key.utf8),
                                                                        value: try ContractCoding.encode(remix)))
            }
            // The source's owner hears the remix: the record is sequenced, so the fork was learned with it.
            try await harness.waitForSequence("user:olive", atLeast: 1)

            let remixer = try await RawSocket(url: harness.socketURL(user: "rami"))
            defer { remixer.close() }
            let joined = try await authorization.join(remixer, "room:fork-1", ref: "1")
            #expect(joined["status"] as? String == "ok", "\(joined)")
            let owner = try await RawSocket(url: harness.socketURL(user: "olive"))
            defer { owner.close() }
            #expect(try await authorization.join(owner, "room:fork-1", ref: "1")["status"] as? String == "ok")
            #expect(try await authorization.join(owner, "room:fork-own", ref: "2")["status"] as? String == "ok")
            let anonymous = try await RawSocket(url: harness.anonSocketURL())
            defer { anonymous.close() }
            #expect(try await authorization.join(anonymous, "room:fork-1", ref: "1")["status"] as? String == "ok")

            // A later version of the fork (the remixer's own upload) reaches the channel.
            try await harness.transcodeStatus(RoomTranscodeStatus(roomId: "fork-1", versionId: "v2-fork-1", ownerUserId: "rami",
                                                                  visibility: .public, status: .queued, at: Date()))
            let frame = try #require(try await remixer.frame(timeout: 15) as? [String: Any])
            let payload = try #require((frame["payload"] as? [String: Any])?["payload"] as? [String: Any])
            #expect(payload["version_id"] as? String == "v2-fork-1" && payload["status"] as? String == "queued", "\(frame)")

            let rows = try await harness.database.query("SELECT owner_user_id FROM realtime_rooms WHERE room_id = 'fork-1'")
            #expect(try rows.first?.decode(String.self, "owner_user_id") == "rami")
        }
    }

    @Test("a remix record names its fork as a room of the remixer, whether or not the source's owner is pushed to")
    func remixInputCarriesTheFork() throws {
        let other = try ChannelSequencer.input(interaction: Self.remix(source: "s", owner: "o", fork: "f", remixer: "r"))
        #expect(other.room == .init(roomID: "f", ownerUserID: "r", visibility: .public))
        #expect(other.drafts.map(\.event) == ["remix_created"])
        let own = try ChannelSequencer.input(interaction: Self.remix(source: "s", owner: "o", fork: "f2", remixer: "o"))
        #expect(own.room == .init(roomID: "f2", ownerUserID: "o", visibility: .public) && own.drafts.isEmpty)
        var bad = Self.remix(source: "s", owner: "o", fork: "bad room", remixer: "r")
        bad.outputKeys = []
        #expect(throws: (any Error).self) { try ChannelSequencer.input(interaction: bad) }
    }
}
