import Foundation

public enum ReadingStatus: String, Sendable, Codable, CaseIterable {
    case notStarted = "not_started"
    case inProgress = "in_progress"
    case completed
}

/// `GET /materials/{id}/reading-progress` for the token's user. A material never read is
/// `status: "not_started"` with no position (the app then falls back to its local store).
public struct ReadingProgressResponse: Sendable, Hashable, Codable {
    public var materialId: String
    public var status: ReadingStatus
    public var lastPosition: ReadingPosition?
    public var progressPercent: Double
    public var totalActiveSeconds: Int
    public var firstReadAt: Date?
    public var lastReadAt: Date?
    public var completedAt: Date?
    public var lastSessionId: String?
    public var readingTargetType: ReadingTargetType?
    public var knowledgeBaseId: String?

    public init(materialId: String, status: ReadingStatus, lastPosition: ReadingPosition? = nil,
                progressPercent: Double = 0, totalActiveSeconds: Int = 0, firstReadAt: Date? = nil,
                lastReadAt: Date? = nil, completedAt: Date? = nil, lastSessionId: String? = nil,
                readingTargetType: ReadingTargetType? = nil, knowledgeBaseId: String? = nil) {
        self.materialId = materialId
        self.status = status
        self.lastPosition = lastPosition
        self.progressPercent = progressPercent
        self.totalActiveSeconds = totalActiveSeconds
        self.firstReadAt = firstReadAt
        self.lastReadAt = lastReadAt
        self.completedAt = completedAt
        self.lastSessionId = lastSessionId
        self.readingTargetType = readingTargetType
        self.knowledgeBaseId = knowledgeBaseId
    }

    public static func notStarted(_ materialId: String) -> ReadingProgressResponse {
        ReadingProgressResponse(materialId: materialId, status: .notStarted)
    }
}

/// `GET /learning/continue`: `{"type":"material", …}` or `{"type":"none"}`.
public struct ContinueLearningResponse: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable { case material, none }

    public var type: Kind
    public var materialId: String?
    public var readingTargetType: ReadingTargetType?
    public var knowledgeBaseId: String?
    public var lastPosition: ReadingPosition?
    public var progressPercent: Double?
    public var lastReadAt: Date?

    public init(type: Kind, materialId: String? = nil, readingTargetType: ReadingTargetType? = nil,
                knowledgeBaseId: String? = nil, lastPosition: ReadingPosition? = nil, progressPercent: Double? = nil,
                lastReadAt: Date? = nil) {
        self.type = type
        self.materialId = materialId
        self.readingTargetType = readingTargetType
        self.knowledgeBaseId = knowledgeBaseId
        self.lastPosition = lastPosition
        self.progressPercent = progressPercent
        self.lastReadAt = lastReadAt
    }

    public static let none = ContinueLearningResponse(type: .none)
}

/// The value of a `reading.progress.v1` record (key: `userId`), published after the
/// projector commits a change, for cross-device sync through the notifier.
public struct ReadingProgressChanged: Sendable, Hashable, Codable {
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    public var userId: String
    public var materialId: String
    public var status: ReadingStatus
    public var lastPosition: ReadingPosition?
    public var progressPercent: Double
    public var totalActiveSeconds: Int
    public var lastReadAt: Date?
    public var lastSessionId: String?

    public init(userId: String, materialId: String, status: ReadingStatus, lastPosition: ReadingPosition?,
                progressPercent: Double, totalActiveSeconds: Int, lastReadAt: Date?, lastSessionId: String?) {
        self.schemaVersion = Self.currentSchemaVersion
        self.userId = userId
        self.materialId = materialId
        self.status = status
        self.lastPosition = lastPosition
        self.progressPercent = progressPercent
        self.totalActiveSeconds = totalActiveSeconds
        self.lastReadAt = lastReadAt
        self.lastSessionId = lastSessionId
    }
}
