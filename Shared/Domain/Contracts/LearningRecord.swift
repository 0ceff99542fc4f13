import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The value of a `learning.sessions.v1` record: one write of the learning app, produced by
/// ingest once validated, applied by the analytics aggregator. Key: the user id (catalog
/// writes: `catalog`, so the catalog keeps its order on one partition).
///
/// Exactly one of the payloads is present, the one `kind` names.
public struct LearningRecord: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Hashable, Codable {
        case knowledgeBase, path, lesson, session, goal, reviewCompleted, feedback
    }

    public static let currentSchemaVersion = 1
    /// UTC−12:00 … UTC+14:00.
    public static let offsetRange = -720...840
    /// The key of catalog records.
    public static let catalogKey = "catalog"

    public var schemaVersion: Int
    public var kind: Kind
    /// The user (absent on catalog writes).
    public var userId: String?
    public var receivedAt: Date
    public var knowledgeBase: KnowledgeBase?
    public var path: LearningPath?
    public var lesson: Lesson?
    public var session: LearningSessionRequest?
    public var goal: LearningGoalRequest?
    public var reviewId: String?
    public var review: ReviewCompletionRequest?
    /// A feedback, its `feedbackId` always set by ingest.
    public var feedback: FeedbackRequest?

    public init(kind: Kind, userId: String?, receivedAt: Date, knowledgeBase: KnowledgeBase? = nil, path: LearningPath? = nil,
                lesson: Lesson? = nil, session: LearningSessionRequest? = nil, goal: LearningGoalRequest? = nil,
                reviewId: String? = nil, review: ReviewCompletionRequest? = nil, feedback: FeedbackRequest? = nil) {
        self.feedback = feedback
        self.schemaVersion = Self.currentSchemaVersion
        self.kind = kind
        self.userId = userId
        self.receivedAt = receivedAt
        self.knowledgeBase = knowledgeBase
        self.path = path
        self.lesson = lesson
        self.session = session
        self.goal = goal
        self.reviewId = reviewId
        self.review = review
    }

    /// The record key: the user, or `catalog`.
    public var key: String { userId ?? Self.catalogKey }

    /// The one rule of a learning record: ingest checks it before producing, the aggregator
    /// before applying (a record that fails goes to the dead-letter topic).
    public func validate() throws(LearningContractViolation) {
        guard (1...Self.currentSchemaVersion).contains(schemaVersion) else {
            throw .init("schemaVersion", "schema version \(schemaVersion) is not supported")
        }
        try rejectNUL()
        switch kind {
        case .knowledgeBase:
            guard let knowledgeBase else { throw .init("knowledgeBase", "missing") }
            try Self.validate(knowledgeBase)
        case .path:
            guard let path else { throw .init("path", "missing") }
            try Self.validate(path)
        case .lesson:
            guard let lesson else { throw .init("lesson", "missing") }
            try Self.validate(lesson)
        case .session:
            try requireUser()
            guard let session else { throw .init("session", "missing") }
            try session.validate()
        case .goal:
            try requireUser()
            guard let goal else { throw .init("goal", "missing") }
            try goal.validate()
        case .reviewCompleted:
            try requireUser()
            guard let reviewId, Identifier.isValid(reviewId) else { throw .init("reviewId", "reviewId must be \(Identifier.rule)") }
            try (review ?? ReviewCompletionRequest()).validate()
        case .feedback:
            try requireUser()
            guard let feedback, feedback.feedbackId != nil else { throw .init("feedback", "missing, or without its feedbackId") }
            try feedback.validate()
        }
    }

    /// No text of a learning record holds U+0000: PostgreSQL's `text` and `jsonb` cannot keep it,
    /// so a record with one would be accepted and never applied.
    func rejectNUL() throws(LearningContractViolation) {
        guard let json = try? ContractCoding.encode(self) else { throw .init("body", "not encodable") }
        // The encoder writes U+0000 as `\u0000`: each backslash found by memchr, the rest compared.
        let found = json.withUnsafeBytes { bytes -> Bool in
            guard let base = bytes.baseAddress else { return false }
            var offset = 0
            while offset + 6 <= bytes.count, let hit = memchr(base + offset, 0x5C, bytes.count - offset) {
                let at = base.distance(to: UnsafeRawPointer(hit))
                if at + 6 <= bytes.count, memcmp(base + at + 1, "u0000", 5) == 0 { return true }
                offset = at + 1
            }
            return false
        }
        if found {
            throw .init("body", "a text holds U+0000, which no field may")
        }
    }

    private func requireUser() throws(LearningContractViolation) {
        guard let userId, Identifier.isValid(userId) else { throw .init("userId", "userId must be \(Identifier.rule)") }
    }

    static let maxTitleBytes = 512
    static let maxBodyBytes = 256 * 1024
    static let maxListItems = 64
    static let maxItemBytes = 2048

    static func id(_ name: String, _ value: String) throws(LearningContractViolation) {
        guard Identifier.isValid(value) else { throw .init(name, "\(name) must be \(Identifier.rule)") }
    }

    static func version(_ value: Int) throws(LearningContractViolation) {
        guard (1...Int(Int32.max)).contains(value) else { throw .init("version", "version must be a whole number 1…2147483647") }
    }

    static func title(_ value: String) throws(LearningContractViolation) {
        guard !value.isEmpty, value.utf8.count <= maxTitleBytes else { throw .init("title", "title must be 1…\(maxTitleBytes) bytes") }
    }

    static func list(_ name: String, _ items: [String]) throws(LearningContractViolation) {
        guard items.count <= maxListItems, items.allSatisfy({ !$0.isEmpty && $0.utf8.count <= maxItemBytes }) else {
            throw .init(name, "\(name) holds at most \(maxListItems) non-empty items of at most \(maxItemBytes) bytes")
        }
    }

    public static func validate(_ base: KnowledgeBase) throws(LearningContractViolation) {
        try id("id", base.id)
        try version(base.version)
        try title(base.title)
    }

    public static func validate(_ path: LearningPath) throws(LearningContractViolation) {
        try id("id", path.id)
        try id("knowledgeBaseId", path.knowledgeBaseId)
        try version(path.version)
        try title(path.title)
        guard path.modules.count <= maxListItems else { throw .init("modules", "at most \(maxListItems) modules") }
        var seen = Set<String>()
        for module in path.modules {
            try id("modules.id", module.id)
            try title(module.title)
            guard module.lessonIds.count <= maxListItems else { throw .init("modules.lessonIds", "at most \(maxListItems) lessons a module") }
            for lesson in module.lessonIds {
                try id("modules.lessonIds", lesson)
                guard seen.insert(lesson).inserted else { throw .init("modules.lessonIds", "lesson \(lesson) is listed twice") }
            }
        }
        if let days = path.estimatedDays, !(1...3650).contains(days) { throw .init("estimatedDays", "estimatedDays must be 1…3650") }
    }

    public static func validate(_ lesson: Lesson) throws(LearningContractViolation) {
        try id("id", lesson.id)
        try id("knowledgeBaseId", lesson.knowledgeBaseId)
        try version(lesson.version)
        try title(lesson.title)
        guard lesson.body.utf8.count <= maxBodyBytes else { throw .init("body", "body holds at most \(maxBodyBytes) bytes") }
        try list("objectives", lesson.objectives)
        try list("keyConcepts", lesson.keyConcepts)
        guard lesson.recallQuestions.count <= maxListItems else { throw .init("recallQuestions", "at most \(maxListItems) questions") }
        var seen = Set<String>()
        for question in lesson.recallQuestions {
            try id("recallQuestions.id", question.id)
            guard seen.insert(question.id).inserted else { throw .init("recallQuestions.id", "question \(question.id) is listed twice") }
            guard !question.question.isEmpty, question.question.utf8.count <= maxItemBytes else {
                throw .init("recallQuestions.question", "a question is 1…\(maxItemBytes) bytes")
            }
            try list("recallQuestions.expectedPoints", question.expectedPoints)
        }
        if let rules = lesson.analysisRules {
            if let units = rules.minAnswerUnits, !(1...10_000).contains(units) {
                throw .init("analysisRules.minAnswerUnits", "minAnswerUnits must be 1…10000")
            }
            if let threshold = rules.coverageThreshold, !(threshold > 0 && threshold <= 1) {
                throw .init("analysisRules.coverageThreshold", "coverageThreshold must be within (0, 1]")
            }
        }
        if let minutes = lesson.estimatedMinutes, !(1...1440).contains(minutes) {
            throw .init("estimatedMinutes", "estimatedMinutes must be 1…1440")
        }
    }
}

extension ErrorCode {
    /// `POST /ai/chat` without a configured model endpoint (503).
    public static let aiUnavailable: ErrorCode = "AI_UNAVAILABLE"
}
