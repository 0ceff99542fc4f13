import Contracts
import Foundation
import Ingest
import Testing

@Suite("Batch decisions: duplicates within a batch and material rules")
struct BatchPlanTests {
    let now = Date()
    let validator = ReadingEventValidator()

    func entry(_ id: String, _ type: ReadingTargetType = .knowledgeSource, owner: String? = nil, expires: Date? = nil,
               deleted: Bool = false) -> MaterialResponse {
        MaterialResponse(materialId: id, readingTargetType: type, knowledgeBaseId: nil, ownerUserId: owner, expiresAt: expires,
                      deleted: deleted, updatedAt: now)
    }

    @Test("an event id repeated in one batch is a duplicate, in request order, case-insensitively")
    func inBatchDuplicates() {
        let id = UUID().uuidString
        let plan = ReadingEventBatchPlan(items: [sampleEvent(id: id), sampleEvent(), sampleEvent(id: id.lowercased())],
                                         validator: validator, now: now)
        let results = plan.response.results
        #expect(results.map(\.status) == [.accepted, .accepted, .duplicate])
        #expect(results[2].code == .duplicateEvent)
        #expect(results[2].eventId == id.lowercased())
        #expect(plan.candidates.count == 2)
    }

    @Test("catalog rules: shared lessons for all, owned materials for their owner, deleted and expired refused")
    func materialRules() {
        let materials = [
            "shared": entry("shared"),
            "mine": entry("mine", owner: "u1"),
            "theirs": entry("theirs", owner: "u2"),
            "gone": entry("gone", deleted: true),
            "tmp-old": entry("tmp-old", .temporaryFile, owner: "u1", expires: now.addingTimeInterval(-1)),
            "tmp-new": entry("tmp-new", .temporaryFile, owner: "u1", expires: now.addingTimeInterval(3600)),
        ]
        let cases: [(String, String, ErrorCode?)] = [
            ("shared", "knowledgeSource", nil), ("mine", "knowledgeSource", nil),
            ("theirs", "knowledgeSource", .materialAccessDenied), ("unknown", "knowledgeSource", .materialAccessDenied),
            ("gone", "knowledgeSource", .sourceDeleted), ("tmp-old", "temporaryFile", .temporaryMaterialExpired),
            ("tmp-new", "temporaryFile", nil), ("shared", "temporaryFile", .materialAccessDenied),
        ]
        var plan = ReadingEventBatchPlan(items: cases.map { sampleEvent(material: $0.0, target: $0.1) }, validator: validator, now: now)
        plan.applyMaterials(materials, userID: "u1", now: now)
        plan.acceptCandidates()
        for (result, expected) in zip(plan.response.results, cases) {
            #expect(result.code == expected.2, "material \(expected.0) as \(expected.1)")
            #expect(result.status == (expected.2 == nil ? .accepted : .rejected))
        }
    }

    @Test("ids accepted by an earlier request are duplicates; counts add up")
    func acrossBatches() {
        let old = UUID().uuidString
        var plan = ReadingEventBatchPlan(items: [sampleEvent(id: old), sampleEvent(), sampleEvent(id: "bad")],
                                         validator: validator, now: now)
        plan.applyAlreadyAccepted([old.lowercased()])
        plan.acceptCandidates()
        let response = plan.response
        #expect(response.results.map(\.status) == [.duplicate, .accepted, .rejected])
        #expect((response.accepted, response.duplicates, response.rejected) == (1, 1, 1))
    }
}
