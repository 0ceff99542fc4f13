import Foundation
import JSON

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

/// Where the reader is in a material: the on-device runtime's own position object, kept as the
/// app sent it and given back in `lastPosition`. Keys this system recognises, each optional:
/// - page-based `page` (1-based) and `totalPages`,
/// - fraction `progress` (0…1),
/// - scroll `scrollOffset` and `contentLength`,
/// - `anchor`, an opaque string the app uses to restore the exact spot.
///
/// Every other key (`chapterId`, `cfi`, `pdfPage`, `zoom`, nested objects…) is carried in
/// `extra` untouched. The percent comes from the recognised keys; a position without them
/// keeps the material's last known percent.
public struct ReadingPosition: Sendable, Hashable, Codable {
    public var page: Int?
    public var totalPages: Int?
    public var progress: Double?
    public var scrollOffset: Double?
    public var contentLength: Double?
    public var anchor: String?
    /// The members of other keys, as sent.
    public var extra: [String: JSONValue]

    /// The largest position accepted, as written (`ContractCoding`'s JSON), and how deeply its
    /// values may nest.
    public static let maxBytes = 4096
    public static let maxDepth = 8
    public static let maxAnchorBytes = 1024
    static let recognisedKeys: Set<String> = ["page", "totalPages", "progress", "scrollOffset", "contentLength", "anchor"]

    public init(page: Int? = nil, totalPages: Int? = nil, progress: Double? = nil, scrollOffset: Double? = nil,
                contentLength: Double? = nil, anchor: String? = nil, extra: [String: JSONValue] = [:]) {
        self.page = page
        self.totalPages = totalPages
        self.progress = progress
        self.scrollOffset = scrollOffset
        self.contentLength = contentLength
        self.anchor = anchor
        self.extra = extra.filter { !Self.recognisedKeys.contains($0.key) }
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

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        page = try c.decodeIfPresent(Int.self, forKey: Key("page"))
        totalPages = try c.decodeIfPresent(Int.self, forKey: Key("totalPages"))
        progress = try c.decodeIfPresent(Double.self, forKey: Key("progress"))
        scrollOffset = try c.decodeIfPresent(Double.self, forKey: Key("scrollOffset"))
        contentLength = try c.decodeIfPresent(Double.self, forKey: Key("contentLength"))
        anchor = try c.decodeIfPresent(String.self, forKey: Key("anchor"))
        var extra: [String: JSONValue] = [:]
        for key in c.allKeys where !Self.recognisedKeys.contains(key.stringValue) {
            extra[key.stringValue] = try c.decode(JSONValue.self, forKey: key)
        }
        self.extra = extra
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encodeIfPresent(page, forKey: Key("page"))
        try c.encodeIfPresent(totalPages, forKey: Key("totalPages"))
        try c.encodeIfPresent(progress, forKey: Key("progress"))
        try c.encodeIfPresent(scrollOffset, forKey: Key("scrollOffset"))
        try c.encodeIfPresent(contentLength, forKey: Key("contentLength"))
        try c.encodeIfPresent(anchor, forKey: Key("anchor"))
        for (key, value) in extra { try c.encode(value, forKey: Key(key)) }
    }

    /// No recognised key with an impossible value: a page below 1 or past `totalPages`,
    /// `totalPages` outside 1…1,000,000, `progress` outside 0…1, a negative `scrollOffset`, a
    /// `contentLength` not above 0 or below the offset, an anchor over 1,024 bytes; the whole
    /// within `maxBytes` and `maxDepth`. Any other object is a position.
    public var isValid: Bool {
        if let anchor, anchor.utf8.count > Self.maxAnchorBytes { return false }
        if let page, page < 1 { return false }
        if let totalPages, totalPages < 1 || totalPages > 1_000_000 { return false }
        if let page, let totalPages, page > totalPages { return false }
        if let progress, !(progress.isFinite && progress >= 0 && progress <= 1) { return false }
        if let scrollOffset, !(scrollOffset.isFinite && scrollOffset >= 0) { return false }
        if let contentLength, !(contentLength.isFinite && contentLength > 0) { return false }
        if let scrollOffset, let contentLength, scrollOffset > contentLength { return false }
        // The recognised keys alone stay far below `maxBytes` (the anchor is bounded above):
        // only a position with other keys is measured, so ingest's hot path writes nothing here.
        guard !extra.isEmpty else { return true }
        guard extra.values.allSatisfy({ $0.depth < Self.maxDepth }) else { return false }
        var w = JSONWriter(capacity: 256)
        write(to: &w)
        return w.bytes.count <= Self.maxBytes
    }

    /// How far through the material, 0…1 (page 12 of 12 is 1), from the recognised keys; nil
    /// when they do not tell.
    public var fraction: Double? {
        if let page, let totalPages, totalPages > 0 { return min(1, max(0, Double(page) / Double(totalPages))) }
        if let progress { return min(1, max(0, progress)) }
        if let scrollOffset, let contentLength, contentLength > 0 { return min(1, max(0, scrollOffset / contentLength)) }
        return nil
    }

    /// Percent rounded to two decimals; nil when the position does not tell.
    public var percent: Double? { fraction.map { ($0 * 10_000).rounded() / 100 } }
}

extension JSONValue {
    /// How deeply containers nest in this value (a scalar is 0).
    var depth: Int {
        switch self {
        case .array(let values): 1 + (values.map(\.depth).max() ?? 0)
        case .object(let members): 1 + (members.values.map(\.depth).max() ?? 0)
        default: 0
        }
    }
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
@dynamicMemberLookup
public struct ReadingEventRecord: Sendable, Hashable, Codable {
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    public var userId: String
    public var receivedAt: Date
    /// The event as the app uploaded it. Its fields read and write as the record's own
    /// (`record.eventId`), and are the record's own keys on the wire (one flat object).
    public var event: ReadingEventUploadItem

    public init(userId: String, receivedAt: Date, item: ReadingEventUploadItem) {
        self.schemaVersion = Self.currentSchemaVersion
        self.userId = userId
        self.receivedAt = receivedAt
        self.event = item
    }

    public subscript<Value>(dynamicMember field: WritableKeyPath<ReadingEventUploadItem, Value>) -> Value {
        get { event[keyPath: field] }
        set { event[keyPath: field] = newValue }
    }

    private enum CodingKeys: String, CodingKey {
        case schemaVersion, userId, receivedAt
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        schemaVersion = try container.decode(Int.self, forKey: .schemaVersion)
        userId = try container.decode(String.self, forKey: .userId)
        receivedAt = try container.decode(Date.self, forKey: .receivedAt)
        event = try ReadingEventUploadItem(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        try event.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(schemaVersion, forKey: .schemaVersion)
        try container.encode(userId, forKey: .userId)
        try container.encode(receivedAt, forKey: .receivedAt)
    }
}
