import Foundation

public enum ReadingTargetType: String, Sendable, Codable, CaseIterable {
    case knowledgeSource
    case temporaryFile
}

public enum ReadingEventType: String, Sendable, Codable, CaseIterable {
    case opened
    case heartbeat
    case positionChanged
    case markedAsRead
    case closed
}

/// Where the reader is in a material. One of three forms, each optionally with an opaque
/// `anchor` the app uses to restore the exact spot:
/// - page-based `{"page":3,"totalPages":12}` (1-based),
/// - fraction `{"progress":0.42}` (0…1),
/// - scroll `{"scrollOffset":1200,"contentLength":5000}`.
public struct ReadingPosition: Sendable, Hashable, Codable {
    public var page: Int?
    public var totalPages: Int?
    public var progress: Double?
    public var scrollOffset: Double?
    public var contentLength: Double?
    public var anchor: String?

    public init(page: Int? = nil, totalPages: Int? = nil, progress: Double? = nil, scrollOffset: Double? = nil,
                contentLength: Double? = nil, anchor: String? = nil) {
        self.page = page
        self.totalPages = totalPages
        self.progress = progress
        self.scrollOffset = scrollOffset
        self.contentLength = contentLength
        self.anchor = anchor
    }

    public static func page(_ page: Int, of total: Int, anchor: String? = nil) -> ReadingPosition {
        ReadingPosition(page: page, totalPages: total, anchor: anchor)
    }

    public static func fraction(_ progress: Double, anchor: String? = nil) -> ReadingPosition {
        ReadingPosition(progress: progress, anchor: anchor)
    }

    public static func scroll(_ offset: Double, of length: Double, anchor: String? = nil) -> ReadingPosition {
        ReadingPosition(scrollOffset: offset, contentLength: length, anchor: anchor)
    }

    /// Exactly one complete form, values in range, anchor at most 1,024 bytes.
    public var isValid: Bool {
        if let anchor, anchor.utf8.count > 1024 { return false }
        let pageForm = page != nil || totalPages != nil
        let fractionForm = progress != nil
        let scrollForm = scrollOffset != nil || contentLength != nil
        guard [pageForm, fractionForm, scrollForm].filter({ $0 }).count == 1 else { return false }
        if pageForm {
            guard let page, let totalPages, totalPages >= 1, totalPages <= 1_000_000, page >= 1, page <= totalPages else { return false }
        }
        if fractionForm {
            guard let progress, progress.isFinite, progress >= 0, progress <= 1 else { return false }
        }
        if scrollForm {
            guard let scrollOffset, let contentLength, scrollOffset.isFinite, contentLength.isFinite,
                  contentLength > 0, scrollOffset >= 0, scrollOffset <= contentLength else { return false }
        }
        return true
    }

    /// How far through the material, 0…1 (page 12 of 12 is 1).
    public var fraction: Double {
        if let page, let totalPages, totalPages > 0 { return min(1, max(0, Double(page) / Double(totalPages))) }
        if let progress { return min(1, max(0, progress)) }
        if let scrollOffset, let contentLength, contentLength > 0 { return min(1, max(0, scrollOffset / contentLength)) }
        return 0
    }

    /// Percent rounded to two decimals.
    public var percent: Double { (fraction * 10_000).rounded() / 100 }
}

/// One event as the app uploads it (`ReadingEventUploadItem` of seed `001_*`).
public struct ReadingEventUploadItem: Sendable, Hashable, Codable {
    public var eventId: String
    public var clientSessionId: String
    public var readingTargetType: ReadingTargetType
    public var materialId: String
    public var knowledgeBaseId: String?
    public var eventType: ReadingEventType
    public var position: ReadingPosition?
    public var activeSecondsDelta: Int
    public var clientTimestamp: Date
    public var clientTimezoneOffsetMinutes: Int
    public var sequence: Int
    public var platform: String
    public var appVersion: String

    public init(eventId: String, clientSessionId: String, readingTargetType: ReadingTargetType, materialId: String,
                knowledgeBaseId: String? = nil, eventType: ReadingEventType, position: ReadingPosition? = nil,
                activeSecondsDelta: Int, clientTimestamp: Date, clientTimezoneOffsetMinutes: Int, sequence: Int,
                platform: String, appVersion: String) {
        self.eventId = eventId
        self.clientSessionId = clientSessionId
        self.readingTargetType = readingTargetType
        self.materialId = materialId
        self.knowledgeBaseId = knowledgeBaseId
        self.eventType = eventType
        self.position = position
        self.activeSecondsDelta = activeSecondsDelta
        self.clientTimestamp = clientTimestamp
        self.clientTimezoneOffsetMinutes = clientTimezoneOffsetMinutes
        self.sequence = sequence
        self.platform = platform
        self.appVersion = appVersion
    }
}

/// `POST /learning/reading-events/batch` body.
public struct ReadingEventBatchRequest: Sendable, Codable {
    public var events: [ReadingEventUploadItem]
    public init(events: [ReadingEventUploadItem]) { self.events = events }
}

/// The outcome of one uploaded event. The client removes every event with a result from
/// its queue (accepted, duplicate and rejected alike) and retries nothing of a 200.
public struct ReadingEventResult: Sendable, Hashable, Codable {
    public enum Status: String, Sendable, Codable { case accepted, duplicate, rejected }

    /// The event's id as sent (absent only when the item had none).
    public var eventId: String?
    public var status: Status
    /// `DUPLICATE_EVENT` for duplicates; the rejection code for rejected events.
    public var code: ErrorCode?
    /// The offending field, for `INVALID_FIELD` and the other validation codes.
    public var field: String?
    public var message: String?

    public init(eventId: String?, status: Status, code: ErrorCode? = nil, field: String? = nil, message: String? = nil) {
        self.eventId = eventId
        self.status = status
        self.code = code
        self.field = field
        self.message = message
    }

    public static func accepted(_ id: String) -> ReadingEventResult { .init(eventId: id, status: .accepted) }
    public static func duplicate(_ id: String) -> ReadingEventResult {
        .init(eventId: id, status: .duplicate, code: .duplicateEvent, message: "event already recorded")
    }
    public static func rejected(_ id: String?, _ code: ErrorCode, field: String? = nil, message: String) -> ReadingEventResult {
        .init(eventId: id, status: .rejected, code: code, field: field, message: message)
    }
}

/// `POST /learning/reading-events/batch` 200 body: one result per event, in request order.
public struct ReadingEventBatchResponse: Sendable, Codable {
    public var results: [ReadingEventResult]
    public var accepted: Int
    public var duplicates: Int
    public var rejected: Int

    public init(results: [ReadingEventResult]) {
        self.results = results
        self.accepted = results.count { $0.status == .accepted }
        self.duplicates = results.count { $0.status == .duplicate }
        self.rejected = results.count { $0.status == .rejected }
    }
}

/// The value of a `reading.events.v2` record: the validated event, the user it belongs to
/// (from the token, never the body) and when ingest received it. Key: `userId`.
public struct ReadingEventRecord: Sendable, Hashable, Codable {
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    public var userId: String
    public var receivedAt: Date
    public var eventId: String
    public var clientSessionId: String
    public var readingTargetType: ReadingTargetType
    public var materialId: String
    public var knowledgeBaseId: String?
    public var eventType: ReadingEventType
    public var position: ReadingPosition?
    public var activeSecondsDelta: Int
    public var clientTimestamp: Date
    public var clientTimezoneOffsetMinutes: Int
    public var sequence: Int
    public var platform: String
    public var appVersion: String

    public init(userId: String, receivedAt: Date, item: ReadingEventUploadItem) {
        self.schemaVersion = Self.currentSchemaVersion
        self.userId = userId
        self.receivedAt = receivedAt
        self.eventId = item.eventId
        self.clientSessionId = item.clientSessionId
        self.readingTargetType = item.readingTargetType
        self.materialId = item.materialId
        self.knowledgeBaseId = item.knowledgeBaseId
        self.eventType = item.eventType
        self.position = item.position
        self.activeSecondsDelta = item.activeSecondsDelta
        self.clientTimestamp = item.clientTimestamp
        self.clientTimezoneOffsetMinutes = item.clientTimezoneOffsetMinutes
        self.sequence = item.sequence
        self.platform = item.platform
        self.appVersion = item.appVersion
    }
}
