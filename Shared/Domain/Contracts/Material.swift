import Foundation

/// `PUT /materials/{id}` body (service token only).
public struct MaterialUpsertRequest: Sendable, Hashable, Codable {
    public var readingTargetType: ReadingTargetType
    public var knowledgeBaseId: String?
    /// `nil`: a shared lesson readable by every user. A `temporaryFile` always has an owner.
    public var ownerUserId: String?
    public var expiresAt: Date?

    public init(readingTargetType: ReadingTargetType, knowledgeBaseId: String? = nil, ownerUserId: String? = nil, expiresAt: Date? = nil) {
        self.readingTargetType = readingTargetType
        self.knowledgeBaseId = knowledgeBaseId
        self.ownerUserId = ownerUserId
        self.expiresAt = expiresAt
    }
}

/// A catalog entry as `PUT`/`DELETE /materials/{id}` return it.
public struct MaterialResponse: Sendable, Hashable, Codable {
    public var materialId: String
    public var readingTargetType: ReadingTargetType
    public var knowledgeBaseId: String?
    public var ownerUserId: String?
    public var expiresAt: Date?
    public var deleted: Bool
    public var updatedAt: Date

    public init(materialId: String, readingTargetType: ReadingTargetType, knowledgeBaseId: String?, ownerUserId: String?,
                expiresAt: Date?, deleted: Bool, updatedAt: Date) {
        self.materialId = materialId
        self.readingTargetType = readingTargetType
        self.knowledgeBaseId = knowledgeBaseId
        self.ownerUserId = ownerUserId
        self.expiresAt = expiresAt
        self.deleted = deleted
        self.updatedAt = updatedAt
    }
}
