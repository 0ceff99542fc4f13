import Auth
import Contracts
import Foundation
import Testing
@testable import RealtimeNotifier

@Suite("Hostile source records")
struct HostileRecordTests {
    func status(roomId: String, owner: String = "u1") throws -> RoomTranscodeStatus {
        let json = #"{"schemaVersion":1,"roomId":\#(Self.quoted(roomId)),"versionId":"v1","ownerUserId":\#(Self.quoted(owner)),"status":"queued","at":"2026-01-01T00:00:00Z"}"#
        return try ContractCoding.decode(RoomTranscodeStatus.self, from: Array(json.utf8))
    }

    static func quoted(_ value: String) -> String {
        String(decoding: try! JSONEncoder().encode(value), as: UTF8.self)
    }

    @Test("a transcode status whose roomId or owner cannot name a channel is a decode error, not a crash")
    func absurdIdentifiers() throws {
        for bad in [String(repeating: "r", count: 300), "", "room 1", "r\u{0}1", "r\n1"] {
            #expect(throws: (any Error).self, "roomId \(bad.debugDescription)") { try ChannelSequencer.input(status: try status(roomId: bad)) }
            #expect(throws: (any Error).self, "owner \(bad.debugDescription)") {
                try ChannelSequencer.input(status: try status(roomId: "r1", owner: bad))
            }
        }
        let longest = String(repeating: "r", count: Identifier.maxUTF8Length)
        let input = try ChannelSequencer.input(status: try status(roomId: longest))
        #expect(input.drafts.map(\.channel.name) == ["room:" + longest, "user:u1"])
    }

    @Test("channel names are bounded by the shared identifier limit and carry no control characters")
    func channelNames() {
        #expect(ChannelName.maxUTF8Length == 5 + Identifier.maxUTF8Length)
        #expect(ChannelName(String(repeating: "c", count: ChannelName.maxUTF8Length)) != nil)
        #expect(ChannelName(String(repeating: "c", count: ChannelName.maxUTF8Length + 1)) == nil)
        #expect(ChannelName("lobby\u{0}") == nil)
        #expect(ChannelName.room(String(repeating: "r", count: 300)) == nil)
        #expect(ChannelName.user("u 1") == nil)
        #expect(ChannelName.user("u1")?.name == "user:u1")
    }
}
