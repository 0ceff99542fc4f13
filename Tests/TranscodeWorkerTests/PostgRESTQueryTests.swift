import Contracts
import HTTPRouting
import Testing
@testable import TranscodeWorker

@Suite("PostgREST subset: what the catalog accepts and what it names as unsupported")
struct PostgRESTQueryTests {
    func parse(_ query: [String: String], _ resource: CatalogResource = .rooms) throws -> PostgRESTQuery {
        try PostgRESTQuery.parse(query, resource: resource, maxLimit: 100)
    }

    func code(_ query: [String: String], _ resource: CatalogResource = .rooms) -> String? {
        do {
            _ = try parse(query, resource)
            return nil
        } catch let error as HTTPError {
            return error.code
        } catch {
            return "unexpected"
        }
    }

    @Test("the app's feed call: eq filter, order desc, limit")
    func feedCall() throws {
        let query = try parse(["visibility": "eq.public", "order": "created_at.desc", "limit": "20"])
        #expect(query.filters == [.init(column: "visibility", op: .eq, values: ["public"])])
        #expect(query.order == [.init(column: "created_at", descending: true, nullsFirst: true)])
        #expect(query.limit == 20 && query.columns == nil)
    }

    @Test("in lists with quoted values, cs sets, nullslast, a limit above the cap is cut")
    func listsAndModifiers() throws {
        let query = try parse(["id": "in.(a,\"b,c\",d)", "tags": "cs.{nook,loft}", "order": "feed_rank.desc.nullslast,id.asc",
                               "limit": "5000", "offset": "40"])
        #expect(query.filters.first { $0.column == "id" }?.values == ["a", "b,c", "d"])
        #expect(query.filters.first { $0.column == "tags" }?.values == ["nook", "loft"])
        #expect(query.order == [.init(column: "feed_rank", descending: true, nullsFirst: false),
                                .init(column: "id", descending: false, nullsFirst: false)])
        #expect(query.limit == 100 && query.offset == 40)
    }

    @Test("select with the current version embedded, by alias or by name, and all versions")
    func embeds() throws {
        let aliased = try parse(["select": "*,current_version:room_versions(id,status)"])
        #expect(aliased.columns == nil)
        #expect(aliased.embeds == [.init(kind: .currentVersion, name: "current_version", columns: ["id", "status"])])
        let named = try parse(["select": "id,title,current_version(*)"])
        #expect(named.columns == ["id", "title"] && named.embeds.first?.kind == .currentVersion)
        let all = try parse(["select": "id,room_versions(*)"])
        #expect(all.embeds == [.init(kind: .versions, name: "room_versions", columns: nil)])
    }

    @Test("everything outside the subset is a 400 whose code names the part")
    func unsupported() {
        #expect(code(["title": "neq.x"]) == ErrorCode.unsupportedOperator.rawValue)
        #expect(code(["title": "not.eq.x"]) == ErrorCode.unsupportedOperator.rawValue)
        #expect(code(["title": "gt.x"]) == ErrorCode.unsupportedOperator.rawValue)
        #expect(code(["colour": "eq.red"]) == ErrorCode.unsupportedColumn.rawValue)
        #expect(code(["select": "id,colour"]) == ErrorCode.unsupportedColumn.rawValue)
        #expect(code(["select": "*,comments(*)"]) == ErrorCode.unsupportedSelect.rawValue)
        #expect(code(["select": "name:title"]) == ErrorCode.unsupportedSelect.rawValue)
        #expect(code(["select": "*,current_version(*)"], .roomVersions) == ErrorCode.unsupportedSelect.rawValue)
        #expect(code(["order": "owner_id.desc"]) == ErrorCode.unsupportedOrder.rawValue)
        #expect(code(["order": "created_at.sideways"]) == ErrorCode.unsupportedOrder.rawValue)
        #expect(code(["or": "(title.eq.a,title.eq.b)"]) == ErrorCode.unsupportedParameter.rawValue)
        #expect(code(["limit": "-1"]) == ErrorCode.invalidQuery.rawValue)
        #expect(code(["id": "in.a,b"]) == ErrorCode.invalidQuery.rawValue)
        #expect(code(["id": "public"]) == ErrorCode.invalidQuery.rawValue)
        #expect(code(["status": "eq.failed"], .roomVersions) == nil)
    }
}
