import Contracts
import Foundation

/// Turns one raw uploaded item (any JSON) into a typed event, or the result that rejects it.
///
/// Each rule maps to the code the app acts on: a malformed or missing `eventId` is
/// `INVALID_EVENT_ID`, an unknown `eventType` `INVALID_EVENT_TYPE`, a position that is not
/// one of the three documented forms (or out of range) `INVALID_POSITION`, a timestamp more
/// than 10 minutes ahead or 30 days behind `INVALID_TIMESTAMP`, a delta outside 0…3600
/// `INVALID_ACTIVE_SECONDS`, an offset outside −720…840 minutes `INVALID_TIMEZONE`, and any
/// other missing or malformed field `INVALID_FIELD` with the field's name.
public struct ReadingEventValidator: Sendable {
    public static let maxActiveSecondsDelta = 3600
    public static let timezoneOffsetRange = -720...840
    public static let maxIdentifierLength = 256
    public static let maxLabelLength = 64

    public var maxClockSkewAhead: TimeInterval
    public var maxEventAge: TimeInterval

    public init(maxClockSkewAhead: TimeInterval = 600, maxEventAge: TimeInterval = 30 * 86_400) {
        self.maxClockSkewAhead = maxClockSkewAhead
        self.maxEventAge = maxEventAge
    }

    public init(configuration: IngestConfiguration) {
        self.init(maxClockSkewAhead: configuration.maxClockSkewAhead, maxEventAge: configuration.maxEventAge)
    }

    /// A rejection: the code and the field it is about.
    public struct Rejection: Error, Sendable, Equatable {
        public var code: ErrorCode
        public var field: String
        public var message: String
    }

    /// The event id as sent, if the item has a string `eventId` (for the result line).
    public static func rawEventID(_ item: JSONValue) -> String? { item["eventId"]?.stringValue }

    public func validate(_ item: JSONValue, now: Date) -> Result<ReadingEventUploadItem, Rejection> {
        do {
            return .success(try typedItem(item, now: now))
        } catch let rejection as Rejection {
            return .failure(rejection)
        } catch {
            return .failure(Rejection(code: .invalidField, field: "event", message: "event could not be read"))
        }
    }

    private func typedItem(_ item: JSONValue, now: Date) throws -> ReadingEventUploadItem {
        guard let object = item.objectValue else {
            throw Rejection(code: .invalidField, field: "event", message: "an event must be a JSON object")
        }
        guard let eventID = object["eventId"]?.stringValue, UUID(uuidString: eventID) != nil else {
            throw Rejection(code: .invalidEventID, field: "eventId", message: "eventId must be a UUID")
        }
        guard let typeText = object["eventType"]?.stringValue, let eventType = ReadingEventType(rawValue: typeText) else {
            throw Rejection(code: .invalidEventType, field: "eventType",
                            message: "eventType must be one of opened, heartbeat, positionChanged, markedAsRead, closed")
        }
        guard let targetText = object["readingTargetType"]?.stringValue,
              let target = ReadingTargetType(rawValue: targetText) else {
            throw Rejection(code: .invalidField, field: "readingTargetType",
                            message: "readingTargetType must be knowledgeSource or temporaryFile")
        }
        let materialID = try identifier(object, "materialId")
        let sessionID = try identifier(object, "clientSessionId")
        let knowledgeBaseID = try optionalIdentifier(object, "knowledgeBaseId")
        let position = try self.position(object["position"], required: eventType == .positionChanged)
        guard let delta = object["activeSecondsDelta"].flatMap(Self.integer),
              delta >= 0, delta <= Self.maxActiveSecondsDelta else {
            throw Rejection(code: .invalidActiveSeconds, field: "activeSecondsDelta",
                            message: "activeSecondsDelta must be an integer within 0…\(Self.maxActiveSecondsDelta)")
        }
        let timestamp = try self.timestamp(object["clientTimestamp"], now: now)
        guard let offset = object["clientTimezoneOffsetMinutes"].flatMap(Self.integer),
              Self.timezoneOffsetRange.contains(offset) else {
            throw Rejection(code: .invalidTimezone, field: "clientTimezoneOffsetMinutes",
                            message: "clientTimezoneOffsetMinutes must be an integer within −720…840")
        }
        guard let sequence = object["sequence"].flatMap(Self.integer), sequence >= 0 else {
            throw Rejection(code: .invalidField, field: "sequence", message: "sequence must be a non-negative integer")
        }
        let platform = try label(object, "platform")
        let appVersion = try label(object, "appVersion")
        return ReadingEventUploadItem(
            eventId: eventID, clientSessionId: sessionID, readingTargetType: target, materialId: materialID,
            knowledgeBaseId: knowledgeBaseID, eventType: eventType, position: position, activeSecondsDelta: delta,
            clientTimestamp: timestamp, clientTimezoneOffsetMinutes: offset, sequence: sequence,
            platform: platform, appVersion: appVersion)
    }

    // MARK: - Fields

    private func identifier(_ object: [String: JSONValue], _ name: String) throws -> String {
        guard let text = object[name]?.stringValue, !text.isEmpty, text.utf8.count <= Self.maxIdentifierLength,
              !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw Rejection(code: .invalidField, field: name,
                            message: "\(name) must be a non-empty string of at most \(Self.maxIdentifierLength) bytes")
        }
        return text
    }

    private func optionalIdentifier(_ object: [String: JSONValue], _ name: String) throws -> String? {
        guard let value = object[name], !value.isNull else { return nil }
        return try identifier(object, name)
    }

    private func label(_ object: [String: JSONValue], _ name: String) throws -> String {
        guard let text = object[name]?.stringValue, !text.isEmpty, text.utf8.count <= Self.maxLabelLength else {
            throw Rejection(code: .invalidField, field: name,
                            message: "\(name) must be a non-empty string of at most \(Self.maxLabelLength) bytes")
        }
        return text
    }

    private func timestamp(_ value: JSONValue?, now: Date) throws -> Date {
        let date: Date?
        switch value {
        case .string(let text)?: date = ContractCoding.parseTimestamp(text)
        case .number(let millis)? where millis.isFinite: date = Date(timeIntervalSince1970: millis / 1000)
        default: date = nil
        }
        guard let date else {
            throw Rejection(code: .invalidTimestamp, field: "clientTimestamp",
                            message: "clientTimestamp must be ISO-8601 or epoch milliseconds")
        }
        guard date <= now.addingTimeInterval(maxClockSkewAhead), date >= now.addingTimeInterval(-maxEventAge) else {
            throw Rejection(code: .invalidTimestamp, field: "clientTimestamp",
                            message: "clientTimestamp is more than 10 minutes ahead or 30 days behind the server clock")
        }
        return date
    }

    private static let positionKeys: Set<String> = ["page", "totalPages", "progress", "scrollOffset", "contentLength", "anchor"]

    private func position(_ value: JSONValue?, required: Bool) throws -> ReadingPosition? {
        let invalid = Rejection(code: .invalidPosition, field: "position",
                                message: "position must be {page,totalPages}, {progress} or {scrollOffset,contentLength}, optionally with anchor")
        guard let value, !value.isNull else {
            if required { throw invalid }
            return nil
        }
        guard let object = value.objectValue, Set(object.keys).isSubset(of: Self.positionKeys) else { throw invalid }
        func number(_ key: String) throws -> Double? {
            guard let field = object[key], !field.isNull else { return nil }
            guard let n = field.numberValue else { throw invalid }
            return n
        }
        func integer(_ key: String) throws -> Int? {
            guard let field = object[key], !field.isNull else { return nil }
            guard let n = Self.integer(field) else { throw invalid }
            return n
        }
        var anchor: String?
        if let field = object["anchor"], !field.isNull {
            guard let text = field.stringValue else { throw invalid }
            anchor = text
        }
        let position = ReadingPosition(page: try integer("page"), totalPages: try integer("totalPages"),
                                       progress: try number("progress"), scrollOffset: try number("scrollOffset"),
                                       contentLength: try number("contentLength"), anchor: anchor)
        guard position.isValid else { throw invalid }
        return position
    }

    /// A JSON number that is a whole value representable as `Int`.
    static func integer(_ value: JSONValue) -> Int? {
        guard let n = value.numberValue, n.isFinite, n == n.rounded(), abs(n) < 9.0e15 else { return nil }
        return Int(n)
    }
}
