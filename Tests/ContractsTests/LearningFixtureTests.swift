import Contracts
import Foundation
import Testing

/// The learning app's wire encodings, pinned like the others: a `learning.sessions.v1` record and
/// the `analysis_ready` payload, whose `analysis` is the seed's own example (`003_*` §五).
@Suite("Golden JSON fixtures: the learning app")
struct LearningFixtureTests {
    @Test("a learning.sessions.v1 session record re-encodes unchanged and passes the record's rule")
    func sessionRecord() throws {
        let record = try GoldenFixtureTests.assertRoundTrip(LearningRecord.self, "learning-session-record.json")
        #expect(record.kind == .session && record.key == "learner-7c1e")
        try record.validate()
    }

    @Test("analysis_ready carries the seed's analysis object, field for field")
    func analysisReady() throws {
        let ready = try GoldenFixtureTests.assertRoundTrip(LearningAnalysisReady.self, "learning-analysis-ready.json")
        try ready.analysis.validate()
        #expect(ready.analysis.understandingLevel == LearningAnalysis.level(for: ready.analysis.masteryScore))
        #expect(ready == LearningAnalysisReady(userId: ready.userId, sessionId: ready.sessionId, lessonId: ready.lessonId,
                                               reviewAt: ready.reviewAt, analysis: ready.analysis))
    }
}
