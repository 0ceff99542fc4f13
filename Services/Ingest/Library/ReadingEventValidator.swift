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
        validate(RawReadingEvent(item), now: now)
    }

    public func validate(_ raw: RawReadingEvent, now: Date) -> Result<ReadingEventUploadItem, Rejection> {
        do {
            return .success(try typedItem(raw, now: now))
        } catch let rejection as Rejection {
            return .failure(rejection)
        } catch {
            return .failure(Rejection(code: .invalidField, field: "event", message: "event could not be read"))
        }
    }

    private func typedItem(_ raw: RawReadingEvent, now: Date) throws -> ReadingEventUploadItem {
        guard raw.isObject else {
            throw Rejection(code: .invalidField, field: "event", message: "an event must be a JSON object")
        }
        guard let eventID = raw.eventId.value, Self.isUUID(eventID) else {
            throw Rejection(code: .invalidEventID, field: "eventId", message: "eventId must be a UUID")
        }
        guard let typeText = raw.eventType.value, let eventType = ReadingEventType(rawValue: typeText) else {
            throw Rejection(code: .invalidEventType, field: "eventType",
                            message: "eventType must be one of opened, heartbeat, positionChanged, markedAsRead, closed")
        }
        guard let targetText = raw.readingTargetType.value, let target = ReadingTargetType(rawValue: targetText) else {
            throw Rejection(code: .invalidField, field: "readingTargetType",
                            message: "readingTargetType must be knowledgeSource or temporaryFile")
        }
        let materialID = try identifier(raw.materialId, "materialId")
        let sessionID = try identifier(raw.clientSessionId, "clientSessionId")
        let knowledgeBaseID = raw.knowledgeBaseId.isAbsent ? nil : try identifier(raw.knowledgeBaseId, "knowledgeBaseId")
        let position = try self.position(raw.position, required: eventType == .positionChanged)
        guard let delta = raw.activeSecondsDelta.value, delta >= 0, delta <= Self.maxActiveSecondsDelta else {
            throw Rejection(code: .invalidActiveSeconds, field: "activeSecondsDelta",
                            message: "activeSecondsDelta must be an integer within 0…\(Self.maxActiveSecondsDelta)")
        }
        let timestamp = try self.timestamp(raw, now: now)
        guard let offset = raw.clientTimezoneOffsetMinutes.value, Self.timezoneOffsetRange.contains(offset) else {
            throw Rejection(code: .invalidTimezone, field: "clientTimezoneOffsetMinutes",
                            message: "clientTimezoneOffsetMinutes must be an integer within −720…840")
        }
        guard let sequence = raw.sequence.value, sequence >= 0 else {
            throw Rejection(code: .invalidField, field: "sequence", message: "sequence must be a non-negative integer")
        }
        let platform = try label(raw.platform, "platform")
        let appVersion = try label(raw.appVersion, "appVersion")
        return ReadingEventUploadItem(
            eventId: eventID, clientSessionId: sessionID, readingTargetType: target, materialId: materialID,
            knowledgeBaseId: knowledgeBaseID, eventType: eventType, position: position, activeSecondsDelta: delta,
            clientTimestamp: timestamp, clientTimezoneOffsetMinutes: offset, sequence: sequence,
            platform: platform, appVersion: appVersion)
    }

    // MARK: - Fields

    /// `8-4-4-4-12` hexadecimal digits, either case — what `UUID(uuidString:)` accepts.
    public static func isUUID(_ text: String) -> Bool {
        var index = 0
        for byte in text.utf8 {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                guard (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "f"))
                else { return false }
            }
            index += 1
        }
        return index == 36
    }


    private func identifier(_ value: RawReadingEvent.Field<String>, _ name: String) throws -> String {
        guard let text = value.value, Identifier.isValid(text) else {
            throw Rejection(code: .invalidField, field: name,
                            message: "\(name) must be a non-empty string of at most \(Identifier.maxBytes) bytes without control characters")
        }
        return text
    }

    private func label(_ value: RawReadingEvent.Field<String>, _ name: String) throws -> String {
        guard let text = value.value, !text.isEmpty, text.utf8.count <= Self.maxLabelLength else {
            throw Rejection(code: .invalidField, field: name,
                            message: "\(name) must be a non-empty string of at most \(Self.maxLabelLength) bytes")
        }
        return text
    }

    private static func isNumber(_ timestamp: RawReadingEvent.Timestamp) -> Bool {
        if case .number = timestamp { true } else { false }
    }

    private func timestamp(_ raw: RawReadingEvent, now: Date) throws -> Date {
        guard let timestamp = raw.clientTimestamp.value, timestamp.date != nil || Self.isNumber(timestamp) else {
            throw Rejection(code: .invalidTimestamp, field: "clientTimestamp",
                            message: "clientTimestamp must be ISO-8601, epoch milliseconds, epoch seconds or seconds since 2001")
        }
        guard let date = timestamp.date(near: now, ahead: maxClockSkewAhead, behind: maxEventAge) else {
            throw Rejection(code: .invalidTimestamp, field: "clientTimestamp",
                            message: "clientTimestamp is more than 10 minutes ahead or 30 days behind the server clock")
        }
        return date
    }

    private func position(_ value: RawReadingEvent.Field<RawReadingEvent.RawPosition>, required: Bool) throws -> ReadingPosition? {
        let invalid = Rejection(code: .invalidPosition, field: "position", message: """
            position must be a JSON object of at most \(ReadingPosition.maxBytes) bytes, nested at most \(ReadingPosition.maxDepth) \
            levels; of the keys this system reads, page ≥ 1 and ≤ totalPages (1…1000000), progress 0…1, \
            0 ≤ scrollOffset ≤ contentLength, anchor at most \(ReadingPosition.maxAnchorBytes) bytes
            """)
        if value.isAbsent {
            if required { throw invalid }
            return nil
        }
        guard let raw = value.value, !raw.unkeepable else { throw invalid }
        func get<T>(_ field: RawReadingEvent.Field<T>) throws -> T? {
            switch field {
            case .missing, .null: return nil
            case .invalid: throw invalid
            case .value(let v): return v
            }
        }
        let position = ReadingPosition(page: try get(raw.page), totalPages: try get(raw.totalPages),
                                       progress: try get(raw.progress), scrollOffset: try get(raw.scrollOffset),
                                       contentLength: try get(raw.contentLength), anchor: try get(raw.anchor), extra: raw.extra)
        guard position.isValid else { throw invalid }
        return position
    }
}
