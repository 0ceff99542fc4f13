import Foundation

/// The learning app's knowledge catalog (seed `003_*` §四): `KnowledgeBase → LearningPath →
/// Module → Lesson`. Written with a service token (`PUT /knowledge-bases/{id}`, `/paths/{id}`,
/// `/lessons/{id}`), each body carrying a `version`: a write is applied only when its version
/// is above the stored one, so a repeat (or an older write arriving late) changes nothing.

/// `PUT /knowledge-bases/{id}` body, and the stored knowledge base.
public struct KnowledgeBase: Sendable, Hashable, Codable {
    public var id: String
    public var version: Int
    public var title: String
    public var summary: String?
    public var language: String?

    public init(id: String, version: Int, title: String, summary: String? = nil, language: String? = nil) {
        self.id = id
        self.version = version
        self.title = title
        self.summary = summary
        self.language = language
    }
}

/// One module of a path: its lessons in order.
public struct LearningModule: Sendable, Hashable, Codable {
    public var id: String
    public var title: String
    public var lessonIds: [String]

    public init(id: String, title: String, lessonIds: [String]) {
        self.id = id
        self.title = title
        self.lessonIds = lessonIds
    }
}

/// `PUT /paths/{id}` body: a path of a knowledge base, its modules and their lessons in order.
public struct LearningPath: Sendable, Hashable, Codable {
    public var id: String
    public var version: Int
    public var knowledgeBaseId: String
    public var title: String
    public var summary: String?
    public var estimatedDays: Int?
    public var modules: [LearningModule]

    public init(id: String, version: Int, knowledgeBaseId: String, title: String, summary: String? = nil, estimatedDays: Int? = nil,
                modules: [LearningModule]) {
        self.id = id
        self.version = version
        self.knowledgeBaseId = knowledgeBaseId
        self.title = title
        self.summary = summary
        self.estimatedDays = estimatedDays
        self.modules = modules
    }

    /// The lesson ids in path order (module by module).
    public var lessonIds: [String] { modules.flatMap(\.lessonIds) }
}

/// An active-recall question (主动回忆问题) and the points a good answer covers.
public struct RecallQuestion: Sendable, Hashable, Codable {
    public var id: String
    public var question: String
    public var expectedPoints: [String]

    public init(id: String, question: String, expectedPoints: [String]) {
        self.id = id
        self.question = question
        self.expectedPoints = expectedPoints
    }
}

/// The lesson's AI 分析规则: what the analysers hold an answer to.
public struct AnalysisRules: Sendable, Hashable, Codable {
    /// Below this many units (a CJK character or a word each) the answer is "too short".
    public var minAnswerUnits: Int?
    /// Share of a key concept's or point's n-grams an answer must hold for it to count as covered (0…1).
    public var coverageThreshold: Double?

    public init(minAnswerUnits: Int? = nil, coverageThreshold: Double? = nil) {
        self.minAnswerUnits = minAnswerUnits
        self.coverageThreshold = coverageThreshold
    }
}

/// `PUT /lessons/{id}` body: 正文内容 (`body`), 学习目标 (`objectives`), 重点概念 (`keyConcepts`),
/// 主动回忆问题 (`recallQuestions`), 练习输入 (`practicePrompt`), AI 分析规则 (`analysisRules`).
public struct Lesson: Sendable, Hashable, Codable {
    public var id: String
    public var version: Int
    public var knowledgeBaseId: String
    public var title: String
    public var body: String
    public var objectives: [String]
    public var keyConcepts: [String]
    public var recallQuestions: [RecallQuestion]
    public var practicePrompt: String?
    public var analysisRules: AnalysisRules?
    public var estimatedMinutes: Int?

    public init(id: String, version: Int, knowledgeBaseId: String, title: String, body: String, objectives: [String],
                keyConcepts: [String], recallQuestions: [RecallQuestion], practicePrompt: String? = nil,
                analysisRules: AnalysisRules? = nil, estimatedMinutes: Int? = nil) {
        self.id = id
        self.version = version
        self.knowledgeBaseId = knowledgeBaseId
        self.title = title
        self.body = body
        self.objectives = objectives
        self.keyConcepts = keyConcepts
        self.recallQuestions = recallQuestions
        self.practicePrompt = practicePrompt
        self.analysisRules = analysisRules
        self.estimatedMinutes = estimatedMinutes
    }
}

/// A lesson as a path lists it (without its body).
public struct LessonSummary: Sendable, Hashable, Codable {
    public var id: String
    public var title: String
    public var estimatedMinutes: Int?

    public init(id: String, title: String, estimatedMinutes: Int?) {
        self.id = id
        self.title = title
        self.estimatedMinutes = estimatedMinutes
    }
}

/// `GET /knowledge-bases/{id}`: the base and its paths.
public struct KnowledgeBaseDetail: Sendable, Hashable, Codable {
    public var knowledgeBase: KnowledgeBase
    public var paths: [PathSummary]

    public init(knowledgeBase: KnowledgeBase, paths: [PathSummary]) {
        self.knowledgeBase = knowledgeBase
        self.paths = paths
    }
}

/// A path as its base lists it.
public struct PathSummary: Sendable, Hashable, Codable {
    public var id: String
    public var title: String
    public var summary: String?
    public var estimatedDays: Int?
    public var lessonCount: Int

    public init(id: String, title: String, summary: String?, estimatedDays: Int?, lessonCount: Int) {
        self.id = id
        self.title = title
        self.summary = summary
        self.estimatedDays = estimatedDays
        self.lessonCount = lessonCount
    }
}

/// `GET /paths/{id}`: the path with its modules, each with its lessons in order (lessons not
/// written yet are left out).
public struct PathDetail: Sendable, Hashable, Codable {
    public struct Module: Sendable, Hashable, Codable {
        public var id: String
        public var title: String
        public var lessons: [LessonSummary]
        public init(id: String, title: String, lessons: [LessonSummary]) {
            self.id = id
            self.title = title
            self.lessons = lessons
        }
    }

    public var id: String
    public var version: Int
    public var knowledgeBaseId: String
    public var title: String
    public var summary: String?
    public var estimatedDays: Int?
    public var modules: [Module]

    public init(path: LearningPath, modules: [Module]) {
        self.id = path.id
        self.version = path.version
        self.knowledgeBaseId = path.knowledgeBaseId
        self.title = path.title
        self.summary = path.summary
        self.estimatedDays = path.estimatedDays
        self.modules = modules
    }
}

/// `GET /knowledge-bases`.
public struct KnowledgeBaseList: Sendable, Hashable, Codable {
    public var knowledgeBases: [KnowledgeBase]
    public init(knowledgeBases: [KnowledgeBase]) { self.knowledgeBases = knowledgeBases }
}

/// The answer of a catalog `PUT`: accepted once the broker holds it; the read side applies it
/// when its version is above the stored one.
public struct CatalogWriteAccepted: Sendable, Hashable, Codable {
    public var id: String
    public var version: Int
    public var status: String
    public init(id: String, version: Int) {
        self.id = id
        self.version = version
        self.status = "accepted"
    }
}
