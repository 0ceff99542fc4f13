@testable import Ingest
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
}
