import Contracts
import Foundation
import HTTPRouting
import Kafka
import Testing
@testable import TranscodeWorker

@Suite("The social read models: what the catalog's PostgREST subset takes for them, and which records it refuses")
struct SocialReadModelTests {
    func code(_ query: [String: String], _ resource: CatalogResource) -> String? {
        do {
            _ = try PostgRESTQuery.parse(query, resource: resource, maxLimit: 100)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("comments embed their author as the app asks (author:profiles(display_name,avatar_path)); notifications filter the unread with read_at=is.null")
    func queries() throws {
        let comments = try PostgRESTQuery.parse(["select": "*,author:profiles(display_name,avatar_path)", "room_id": "eq.r-1",
                                                 "order": "created_at.asc"], resource: .comments, maxLimit: 100)
        #expect(comments.embeds == [.init(kind: .author, name: "author", columns: ["display_name", "avatar_path"])])
        #expect(comments.columns == nil && comments.filters.first?.column == "room_id")
        let unread = try PostgRESTQuery.parse(["read_at": "is.null", "order": "created_at.desc"], resource: .notifications, maxLimit: 100)
        #expect(unread.filters == [.init(column: "read_at", op: .is, values: ["null"])])
        #expect(code(["read_at": "is.true"], .notifications) == "INVALID_QUERY")
        #expect(code(["select": "*,author:profiles(password)"], .comments) == "UNSUPPORTED_COLUMN")
        #expect(code(["select": "*,author:users(*)"], .comments) == "UNSUPPORTED_SELECT")
        #expect(code(["select": "*,profiles(*)"], .rooms) == "UNSUPPORTED_SELECT")
        #expect(code(["body": "eq.x"], .comments) == "UNSUPPORTED_COLUMN")
        #expect(code(["order": "body.asc"], .comments) == "UNSUPPORTED_ORDER")
        #expect(code(["select": "like_count,comment_count,remix_count,remixed_from"], .rooms) == nil)
    }

    func decode(_ topic: String, _ value: String) throws -> SocialProjection.Event {
        let projection = SocialProjection(catalog: CatalogProjection(requestsTopic: Topics.roomTranscodeRequests, feedHalfLife: .seconds(3600)))
        return try projection.decode(KafkaConsumerRecord(topic: topic, partition: 0, offset: 0, key: nil, value: Array(value.utf8), timestamp: nil, headers: []))
    }

    @Test("a record missing what its kind needs, naming ids that are not identifiers, or a remix whose copies are outside the fork's folder is refused (to the dead letters); a stage status is skipped")
    func hostileRecords() throws {
        let topic = Topics.roomInteractions
        let at = "\"at\":\"2026-12-06T00:00:00.000Z\",\"schemaVersion\":1,\"interactionId\":\"i-1\""
        let good = #"{"kind":"comment_created","actorId":"u-2","roomId":"r-1","roomOwnerId":"u-1","commentId":"c-1","commentAuthorId":"u-2","body":"hi",\#(at)}"#
        guard case .interaction(let comment) = try decode(topic, good) else { Issue.record("a comment decodes"); return }
        #expect(comment.pushEvent == "comment_new")
        let hostile = [
            "not json", "{}", #"{"kind":"comment_created","actorId":"u-2",\#(at)}"#,
            #"{"kind":"comment_created","actorId":"u-2","roomId":"r-1","roomOwnerId":"u-1","commentId":"c-1","commentAuthorId":"u-2","body":"",\#(at)}"#,
            #"{"kind":"like_added","actorId":"","roomId":"r-1",\#(at)}"#,
            #"{"kind":"like_added","actorId":"u\u0000","roomId":"r-1",\#(at)}"#,
            #"{"kind":"poke","actorId":"u-2","roomId":"r-1",\#(at)}"#,
            #"{"kind":"remix_created","actorId":"u-3","roomId":"r-1","roomOwnerId":"u-1","forkRoomId":"f","forkVersionId":"v","outputKeys":["rooms/r-1/v0/layer_manifest.json"],\#(at)}"#,
        ]
        for value in hostile {
            #expect(throws: (any Error).self, "\(value)") { try decode(topic, value) }
        }
        let stage = #"{"schemaVersion":1,"roomId":"r","versionId":"v","ownerUserId":"u","status":"transcoding","at":"2026-12-06T00:00:00.000Z"}"#
        #expect(try decode(Topics.roomTranscodeStatus, stage) == .ignored)
    }

    @Test("no push for one's own comment, like or remix, nor for a removal or a profile")
    func ownActions() {
        let at = Date()
        #expect(RoomInteraction(interactionId: "i", kind: .commentCreated, actorId: "u", roomId: "r", roomOwnerId: "u", at: at).pushEvent == nil)
        #expect(RoomInteraction(interactionId: "i", kind: .likeAdded, actorId: "v", roomId: "r", roomOwnerId: "u", at: at).pushEvent == "like_new")
        #expect(RoomInteraction(interactionId: "i", kind: .remixCreated, actorId: "v", roomId: "r", roomOwnerId: "u", at: at).pushEvent
                == "remix_created")
        #expect(RoomInteraction(interactionId: "i", kind: .likeRemoved, actorId: "v", roomId: "r", roomOwnerId: "u", at: at).pushEvent == nil)
        #expect(RoomInteraction(interactionId: "i", kind: .profileUpdated, actorId: "v", at: at).pushEvent == nil)
        #expect(RoomInteraction.excerpt(String(repeating: "长", count: 100))?.count == 80)
    }
}
