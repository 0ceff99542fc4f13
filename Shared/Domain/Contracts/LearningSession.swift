import Foundation

/// The analysis object of seed `003_*` §五 (AI 输出结构), exactly its fields.
public struct LearningAnalysis: Sendable, Hashable, Codable {
    /// 0 没有作答/无法判断 … 5 掌握很好.
    public var masteryScore: Int
    public var understandingLevel: String
    public var summary: String
    public var strengths: [String]
    public var weakPoints: [String]
    public var suggestions: [String]
    public var reviewNeeded: Bool
    public var nextAction: String

    public init(masteryScore: Int, understandingLevel: String, summary: String, strengths: [String], weakPoints: [String],
                suggestions: [String], reviewNeeded: Bool, nextAction: String) {
        self.masteryScore = masteryScore
        self.understandingLevel = understandingLevel
        self.summary = summary
        self.strengths = strengths
        self.weakPoints = weakPoints
        self.suggestions = suggestions
        self.reviewNeeded = reviewNeeded
        self.nextAction = nextAction
    }

    /// The seed's six levels (掌握度评分 0-5), by score.
    public static let levels = ["没有作答/无法判断", "基本没理解", "理解较弱", "基本理解", "理解较好", "掌握很好"]

    /// The level of `score` (clamped to 0…5).
    public static func level(for score: Int) -> String { levels[min(5, max(0, score))] }

    /// The seed's shape holds: score 0…5, its level the seed's word for it, text present.
    public func validate() throws(LearningContractViolation) {
        guard (0...5).contains(masteryScore) else { throw .init("masteryScore", "masteryScore must be 0…5") }
        guard Self.levels.contains(understandingLevel) else {
            throw .init("understandingLevel", "understandingLevel must be one of the seed's six levels")
        }
        guard !summary.isEmpty, !nextAction.isEmpty else { throw .init("summary", "summary and nextAction must not be empty") }
    }
}

/// A field of a learning record or body that breaks its rule: 400 `INVALID_FIELD` at the edge,
/// a dead letter on the topic.
public struct LearningContractViolation: Error, Sendable, Hashable, CustomStringConvertible {
    public var field: String
    public var message: String
    public init(_ field: String, _ message: String) {
        self.field = field
        self.message = message
    }
    public var description: String { "\(field): \(message)" }
}

/// `POST /learning/sessions` body: one learning session with the user's recall answer or notes.
public struct LearningSessionRequest: Sendable, Hashable, Codable {
    public var sessionId: String
    public var lessonId: String
    public var startedAt: Date
    public var endedAt: Date
    public var userInput: String
    /// The recall question answered (absent: the lesson's questions together).
    public var questionId: String?
    /// Minutes east of UTC on the device: the user's days (review dates, "today").
    public var clientTimezoneOffsetMinutes: Int?

    public init(sessionId: String, lessonId: String, startedAt: Date, endedAt: Date, userInput: String, questionId: String? = nil,
                clientTimezoneOffsetMinutes: Int? = nil) {
        self.sessionId = sessionId
        self.lessonId = lessonId
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.userInput = userInput
        self.questionId = questionId
        self.clientTimezoneOffsetMinutes = clientTimezoneOffsetMinutes
    }

    /// The most a recall answer may hold, in UTF-8 bytes.
    public static let maxInputBytes = 16 * 1024
    /// The longest a session may last.
    public static let maxDuration: TimeInterval = 24 * 3600

    public func validate() throws(LearningContractViolation) {
        for (name, value) in [("sessionId", sessionId), ("lessonId", lessonId)] where !Identifier.isValid(value) {
            throw .init(name, "\(name) must be \(Identifier.rule)")
        }
        if let questionId, !Identifier.isValid(questionId) { throw .init("questionId", "questionId must be \(Identifier.rule)") }
        guard endedAt >= startedAt, endedAt.timeIntervalSince(startedAt) <= Self.maxDuration else {
            throw .init("endedAt", "endedAt must be at or after startedAt, at most 24 h later")
        }
        guard userInput.utf8.count <= Self.maxInputBytes else {
            throw .init("userInput", "userInput holds at most \(Self.maxInputBytes) bytes")
        }
        if let offset = clientTimezoneOffsetMinutes, !LearningRecord.offsetRange.contains(offset) {
            throw .init("clientTimezoneOffsetMinutes", "clientTimezoneOffsetMinutes must be within −720…840")
        }
    }
}

/// `POST /learning/goal` body: the base and path the learner chose.
public struct LearningGoalRequest: Sendable, Hashable, Codable {
    public var knowledgeBaseId: String
    public var pathId: String
    public var clientTimezoneOffsetMinutes: Int?

    public init(knowledgeBaseId: String, pathId: String, clientTimezoneOffsetMinutes: Int? = nil) {
        self.knowledgeBaseId = knowledgeBaseId
        self.pathId = pathId
        self.clientTimezoneOffsetMinutes = clientTimezoneOffsetMinutes
    }

    public func validate() throws(LearningContractViolation) {
        for (name, value) in [("knowledgeBaseId", knowledgeBaseId), ("pathId", pathId)] where !Identifier.isValid(value) {
            throw .init(name, "\(name) must be \(Identifier.rule)")
        }
        if let offset = clientTimezoneOffsetMinutes, !LearningRecord.offsetRange.contains(offset) {
            throw .init("clientTimezoneOffsetMinutes", "clientTimezoneOffsetMinutes must be within −720…840")
        }
    }
}

/// `POST /learning/reviews/{id}/complete` body: how well the review went (absent: the score of
/// the session that scheduled it).
public struct ReviewCompletionRequest: Sendable, Hashable, Codable {
    public var masteryScore: Int?
    public init(masteryScore: Int? = nil) { self.masteryScore = masteryScore }

    public func validate() throws(LearningContractViolation) {
        if let masteryScore, !(0...5).contains(masteryScore) { throw .init("masteryScore", "masteryScore must be 0…5") }
    }
}

/// The 202 answer of the learning writes: the broker holds the record.
public struct LearningWriteAccepted: Sendable, Hashable, Codable {
    public var id: String
    public var status: String
    public init(id: String, status: String = "accepted") {
        self.id = id
        self.status = status
    }
}

/// `POST /ai/analyze-learning-input` body: analysed at once, nothing stored.
public struct AnalyzeLearningInputRequest: Sendable, Hashable, Codable {
    public var lessonId: String
    public var userInput: String
    public var questionId: String?
    public init(lessonId: String, userInput: String, questionId: String? = nil) {
        self.lessonId = lessonId
        self.userInput = userInput
        self.questionId = questionId
    }
}

/// `GET /learning/sessions/{id}`: the seed's `LearningSession` (§六) with its analysis.
public struct LearningSessionView: Sendable, Hashable, Codable {
    public var id: String
    public var userId: String
    public var lessonId: String
    public var startedAt: Date
    public var endedAt: Date
    public var userInput: String
    public var aiAnalysis: LearningAnalysis
    public var masteryScore: Int
    public var weakPoints: [String]
    public var nextSuggestion: String
    public var reviewAt: Date?
    /// Which analyser produced `aiAnalysis` (`builtin`, or the configured model's name).
    public var analyzer: String

    public init(id: String, userId: String, lessonId: String, startedAt: Date, endedAt: Date, userInput: String,
                aiAnalysis: LearningAnalysis, reviewAt: Date?, analyzer: String) {
        self.id = id
        self.userId = userId
        self.lessonId = lessonId
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.userInput = userInput
        self.aiAnalysis = aiAnalysis
        self.masteryScore = aiAnalysis.masteryScore
        self.weakPoints = aiAnalysis.weakPoints
        self.nextSuggestion = aiAnalysis.nextAction
        self.reviewAt = reviewAt
        self.analyzer = analyzer
    }
}

/// The seed's `ReviewTask` (§六).
public struct ReviewTask: Sendable, Hashable, Codable {
    public var id: String
    public var userId: String
    public var lessonId: String
    public var sourceSessionId: String
    /// `recall`: answer the lesson's recall question again.
    public var reviewType: String
    public var scheduledAt: Date
    /// The user's local day the review is due on (`YYYY-MM-DD`).
    public var scheduledDay: String
    public var completedAt: Date?
    /// `pending` or `completed`.
    public var status: String
    /// The SM-2 state it was scheduled with: repetitions so far, interval in days, easiness factor.
    public var repetition: Int
    public var intervalDays: Int
    public var easeFactor: Double

    public init(id: String, userId: String, lessonId: String, sourceSessionId: String, reviewType: String, scheduledAt: Date,
                scheduledDay: String, completedAt: Date?, status: String, repetition: Int, intervalDays: Int, easeFactor: Double) {
        self.id = id
        self.userId = userId
        self.lessonId = lessonId
        self.sourceSessionId = sourceSessionId
        self.reviewType = reviewType
        self.scheduledAt = scheduledAt
        self.scheduledDay = scheduledDay
        self.completedAt = completedAt
        self.status = status
        self.repetition = repetition
        self.intervalDays = intervalDays
        self.easeFactor = easeFactor
    }
}

/// `GET /learning/review-plan`: pending reviews by due day, then the recent completions.
public struct ReviewPlan: Sendable, Hashable, Codable {
    public var today: String
    public var pending: [ReviewTask]
    public var completed: [ReviewTask]
    public init(today: String, pending: [ReviewTask], completed: [ReviewTask]) {
        self.today = today
        self.pending = pending
        self.completed = completed
    }
}

/// `GET /learning/today`: what to do next (用户知道下一步该干什么).
public struct LearningToday: Sendable, Hashable, Codable {
    public var today: String
    public var knowledgeBaseId: String?
    public var pathId: String?
    /// The first lesson on the path without a session; nil when the path is done or no goal is set.
    public var nextLesson: LessonSummary?
    public var reviewsDue: [ReviewTask]
    public var pathCompleted: Bool
    public init(today: String, knowledgeBaseId: String?, pathId: String?, nextLesson: LessonSummary?, reviewsDue: [ReviewTask],
                pathCompleted: Bool) {
        self.today = today
        self.knowledgeBaseId = knowledgeBaseId
        self.pathId = pathId
        self.nextLesson = nextLesson
        self.reviewsDue = reviewsDue
        self.pathCompleted = pathCompleted
    }
}

/// `GET /learning/profile`: the seed's `UserLearningProfile` (§六).
public struct UserLearningProfile: Sendable, Hashable, Codable {
    public struct Mistake: Sendable, Hashable, Codable {
        public var lessonId: String
        public var sessionId: String
        public var weakPoints: [String]
        public var at: Date
        public init(lessonId: String, sessionId: String, weakPoints: [String], at: Date) {
            self.lessonId = lessonId
            self.sessionId = sessionId
            self.weakPoints = weakPoints
            self.at = at
        }
    }

    public var userId: String
    public var currentKnowledgeBaseId: String?
    public var currentPathId: String?
    public var currentLessonId: String?
    /// The seed's level word for the mean of the latest score of each lesson (nil before any session).
    public var overallLevel: String?
    public var weakPoints: [String]
    public var strengths: [String]
    public var recentMistakes: [Mistake]
    public var reviewQueue: [ReviewTask]
    /// Consecutive local days of reading (the analytics summary's current streak).
    public var learningStreak: Int
    public var updatedAt: Date?

    public init(userId: String, currentKnowledgeBaseId: String?, currentPathId: String?, currentLessonId: String?, overallLevel: String?,
                weakPoints: [String], strengths: [String], recentMistakes: [Mistake], reviewQueue: [ReviewTask], learningStreak: Int,
                updatedAt: Date?) {
        self.userId = userId
        self.currentKnowledgeBaseId = currentKnowledgeBaseId
        self.currentPathId = currentPathId
        self.currentLessonId = currentLessonId
        self.overallLevel = overallLevel
        self.weakPoints = weakPoints
        self.strengths = strengths
        self.recentMistakes = recentMistakes
        self.reviewQueue = reviewQueue
        self.learningStreak = learningStreak
        self.updatedAt = updatedAt
    }
}

/// The payload of `analysis_ready` on `user:{userId}` (through `realtime.broadcasts.v1`): the
/// session's analysis, so the app can show it without a second call.
public struct LearningAnalysisReady: Sendable, Hashable, Codable {
    public var userId: String
    public var sessionId: String
    public var lessonId: String
    public var masteryScore: Int
    public var understandingLevel: String
    public var reviewNeeded: Bool
    public var reviewAt: Date?
    public var analysis: LearningAnalysis

    public static let event = "analysis_ready"

    public init(userId: String, sessionId: String, lessonId: String, reviewAt: Date?, analysis: LearningAnalysis) {
        self.userId = userId
        self.sessionId = sessionId
        self.lessonId = lessonId
        self.masteryScore = analysis.masteryScore
        self.understandingLevel = analysis.understandingLevel
        self.reviewNeeded = analysis.reviewNeeded
        self.reviewAt = reviewAt
        self.analysis = analysis
    }
}

/// `POST /ai/chat` body: one question about a lesson (the seed's preset questions — 帮我解释这一节,
/// 用更简单的话讲, 给我举个例子… — are sent as the message).
public struct AIChatRequest: Sendable, Hashable, Codable {
    public var lessonId: String
    public var message: String
    public init(lessonId: String, message: String) {
        self.lessonId = lessonId
        self.message = message
    }
}

/// `POST /ai/chat` 200 body.
public struct AIChatResponse: Sendable, Hashable, Codable {
    public var lessonId: String
    public var reply: String
    public init(lessonId: String, reply: String) {
        self.lessonId = lessonId
        self.reply = reply
    }
}
