@testable import Ingest
import Contracts
import Foundation
import Testing

/// Which sessions a review id can come from: the aggregator names a session's review
/// `rv-{sessionId}` and the ones after it `rv-{sessionId}-{n}`, and a session id may itself end
/// in `-{digits}`, so both readings are asked for.
@Suite("Learning registry: review ids")
struct LearningRegistryTests {
    @Test("a review id names its session, or the session before its -n suffix; anything else names none")
    func sessionsOfReview() {
        #expect(LearningRegistry.sessions(ofReview: "rv-s1") == ["s1"])
        #expect(LearningRegistry.sessions(ofReview: "rv-s1-2") == ["s1-2", "s1"])
        #expect(LearningRegistry.sessions(ofReview: "rv-6c0f-loop-1-12") == ["6c0f-loop-1-12", "6c0f-loop-1"])
        #expect(LearningRegistry.sessions(ofReview: "rv-s1-x") == ["s1-x"])
        #expect(LearningRegistry.sessions(ofReview: "rv--3") == ["-3"])
        #expect(LearningRegistry.sessions(ofReview: "rv-s1-") == ["s1-"])
        #expect(LearningRegistry.sessions(ofReview: "rv-").isEmpty)
        #expect(LearningRegistry.sessions(ofReview: "review-s1").isEmpty)
        #expect(LearningRegistry.sessions(ofReview: "s1").isEmpty)
    }

    @Test("rv-{s}-{n} is the review after rv-{s}-{n-1} (rv-{s} for n = 1); a zero, a sign or a leading zero is no review of s")
    func previousReview() {
        func readings(_ id: String) -> [String] { LearningRegistry.readings(ofReview: id).map { "\($0.session)<\($0.previous ?? "")" } }
        #expect(readings("rv-s1") == ["s1<"])
        #expect(readings("rv-s1-1") == ["s1-1<", "s1<rv-s1"])
        #expect(readings("rv-s1-2") == ["s1-2<", "s1<rv-s1-1"])
        #expect(readings("rv-s1-99") == ["s1-99<", "s1<rv-s1-98"])
        for id in ["rv-s1-0", "rv-s1-01", "rv-s1-+1"] { #expect(readings(id) == [String(id.dropFirst(3)) + "<"], "\(id)") }
    }
}

/// A NUL in any text of a learning record is refused (PostgreSQL's text holds none).
@Suite("Learning records: NUL")
struct LearningRecordNULTests {
    func record(_ input: String) -> LearningRecord {
        LearningRecord(kind: .session, userId: "u1", receivedAt: Date(timeIntervalSince1970: 1_780_000_000),
                       session: LearningSessionRequest(sessionId: "s1", lessonId: "l1", startedAt: Date(timeIntervalSince1970: 1_780_000_000),
                                                       endedAt: Date(timeIntervalSince1970: 1_780_000_060), userInput: input))
    }

    @Test("an answer holding U+0000 anywhere is refused; backslashes and other control characters are kept")
    func nul() {
        for text in ["\u{0}", "答案\u{0}", "a b \u{0} c", String(repeating: "x", count: 5000) + "\u{0}"] {
            #expect(throws: LearningContractViolation.self, "\(text.utf8.count) bytes") { try record(text).validate() }
        }
        for text in ["a\\b", "\\", "\\u000", "tab\there", "答案\u{1}", String(repeating: "\\", count: 7)] {
            #expect(throws: Never.self) { try record(text).validate() }
        }
    }
}

/// A catalog version is kept in an `integer` by the read models: one above 2147483647 is
/// refused at the edge (it once reached the aggregator, whose write of it failed).
@Suite("Learning records: catalog versions")
struct LearningCatalogVersionTests {
    @Test("versions 1…2147483647 are taken; 0 and 2147483648 are refused naming version")
    func versions() {
        func record(_ version: Int) -> LearningRecord {
            LearningRecord(kind: .knowledgeBase, userId: nil, receivedAt: Date(timeIntervalSince1970: 1_780_000_000),
                           knowledgeBase: KnowledgeBase(id: "kb-1", version: version, title: "学会学习"))
        }
        for version in [1, 7, 2_147_483_647] { #expect(throws: Never.self) { try record(version).validate() } }
        for version in [0, -1, 2_147_483_648, 7_314_782_882] {
            #expect(throws: LearningContractViolation.self) { try record(version).validate() }
            #expect((try? record(version).validate()) == nil)
            do { try record(version).validate() } catch { #expect(error.field == "version") }
        }
    }
}
