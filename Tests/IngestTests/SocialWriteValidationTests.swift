import Contracts
import Foundation
import HTTPRouting
import JSON
import Testing
@testable import Ingest

@Suite("Social writes: what the write edge accepts before anything is stored")
struct SocialWriteValidationTests {
    func request(_ body: String, query: [String: String] = [:], prefer: String? = nil) -> HTTPRequest {
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        if let prefer { headers.add(name: "Prefer", value: prefer) }
        return HTTPRequest(method: .post, path: "/rest/v1/comments", query: query, headers: headers, body: Array(body.utf8))
    }

    func refusal(_ body: () throws -> Void) -> String? {
        do { try body(); return nil } catch let error as HTTPError { return error.code } catch { return "unexpected" }
    }

    @Test("a comment's body is trimmed and holds 1–2000 characters without control characters")
    func commentBody() throws {
        #expect(try SocialRequest.commentBody(.string("  好漂亮  \n")) == "好漂亮")
        #expect(try SocialRequest.commentBody(.string(String(repeating: "长", count: 2_000))).count == 2_000)
        for bad: JSONValue? in [nil, .null, .number(1), .string(""), .string(" \n\t "), .string(String(repeating: "a", count: 2_001)),
                                .string("a\u{7}b"), .string("a\u{0}b"), .string("a\u{85}b")] {
            #expect(refusal { _ = try SocialRequest.commentBody(bad) } == "INVALID_FIELD", "\(String(describing: bad))")
        }
    }

    @Test("one row as an object or an array of one, with the table's writable columns only, strings or nulls")
    func rows() throws {
        let columns: Set<String> = ["room_id", "body"]
        #expect(try SocialRequest.oneRow(request(#"{"room_id":"r","body":"b"}"#), table: "comments", columns: columns).count == 2)
        #expect(try SocialRequest.oneRow(request(#"[{"room_id":"r"}]"#), table: "comments", columns: columns)["room_id"] == .string("r"))
        #expect(refusal { _ = try SocialRequest.oneRow(request("{"), table: "comments", columns: columns) } == "INVALID_JSON")
        #expect(refusal { _ = try SocialRequest.oneRow(request(#"[{"room_id":"r"},{"room_id":"s"}]"#), table: "comments", columns: columns) }
                == "INVALID_FIELD")
        #expect(refusal { _ = try SocialRequest.oneRow(request(#"{"room_id":"r","created_at":"x"}"#), table: "comments", columns: columns) }
                == "INVALID_FIELD")
        #expect(refusal { _ = try SocialRequest.oneRow(request(#"{"room_id":{"x":1}}"#), table: "comments", columns: columns) }
                == "INVALID_FIELD")
        #expect(refusal { _ = try SocialRequest.identifier(["room_id": .string("")], "room_id") } == "INVALID_FIELD")
        #expect(refusal { _ = try SocialRequest.optionalUUID(["id": .string("not-a-uuid")], "id") } == "INVALID_FIELD")
    }

    @Test("deletes take eq filters on the table's keys only; Prefer is read as supabase clients send it")
    func filtersAndPrefer() throws {
        #expect(try SocialRequest.filters(request("", query: ["id": "eq.c-1", "select": "*"]), table: "comments", allowed: ["id"]) == ["id": "c-1"])
        #expect(refusal { _ = try SocialRequest.filters(request("", query: ["id": "in.(a,b)"]), table: "comments", allowed: ["id"]) }
                == "INVALID_QUERY")
        #expect(refusal { _ = try SocialRequest.filters(request("", query: ["body": "eq.x"]), table: "comments", allowed: ["id"]) }
                == "INVALID_QUERY")
        let prefer = Prefer(request("", prefer: "return=representation,resolution=ignore-duplicates"))
        #expect(prefer.representation && prefer.ignoreDuplicates && !prefer.mergeDuplicates)
        #expect(Prefer(request("")).answer(status: .created, rows: [[("id", .string("x"))]]).body.isEmpty)
    }

    @Test("profile fields: given, cleared with null, or left out; a display name of 1–100 characters")
    func profileFields() throws {
        let fields = try SocialRequest.profileFields(["display_name": .string(" Bo "), "avatar_path": .null])
        #expect(fields.displayName == .some("Bo") && fields.avatarPath == .some(nil))
        #expect(try SocialRequest.profileFields([:]).displayName == nil)
        #expect(refusal { _ = try SocialRequest.profileFields(["display_name": .string(String(repeating: "x", count: 101))]) } == "INVALID_FIELD")
        #expect(refusal { _ = try SocialRequest.profileFields(["avatar_path": .string("a\nb")]) } == "INVALID_FIELD")
    }
}
