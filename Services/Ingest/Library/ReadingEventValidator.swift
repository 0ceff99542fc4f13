import Contracts
import Foundation
import JSON

/// Turns one raw uploaded item (any JSON) into a typed event, or the result that rejects it.
///
/// Reading the item finds what is missing or of the wrong type; the bounds are the record's
/// one rule (`ReadingEventUploadItem.validate()` in Contracts), which the progress projector
/// and the analytics aggregator apply to the same record. Each rule maps to the code the app
/// acts on: a malformed or missing `eventId` is `INVALID_EVENT_ID`, an unknown `eventType`
/// `INVALID_EVENT_TYPE`, a position that is not one of the three documented forms (or out of
/// range) `INVALID_POSITION`, a delta outside 0…3600 `INVALID_ACTIVE_SECONDS`, an offset outside
/// −720…840 minutes `INVALID_TIMEZONE`, and any other missing or malformed field
/// `INVALID_FIELD` with the field's name. Ingest's own acceptance rule is the clock: a timestamp
/// more than 10 minutes ahead or 30 days behind the server's is `INVALID_TIMESTAMP`.
public struct ReadingEventValidator: Sendable {
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
    public typealias Rejection = ContractViolation

    /// The event id as sent, if the item has a string `eventId` (for the result line).
    public static func rawEventID(_ item: JSONValue) -> String? { item["eventId"]?.stringValue }

    public func validate(_ item: JSONValue, now: Date) -> Result<ReadingEventUploadItem, Rejection> {
        validate(RawReadingEvent(item), now: now)
    }

    public func validate(_ raw: RawReadingEvent, now: Date) -> Result<ReadingEventUploadItem, Rejection> {
        do {
            let item = try typedItem(raw, now: now)
            try item.validate()
            return .success(item)
        } catch let rejection as Rejection {
            return .failure(rejection)
        } catch {
            return .failure(Rejection(code: .invalidField, field: "event", message: "event could not be read"))
        }
    }

    /// The item's fields by type; their bounds are `ReadingEventUploadItem.validate()`'s.
    private func typedItem(_ raw: RawReadingEvent, now: Date) throws -> ReadingEventUploadItem {
        guard raw.isObject else {
            throw Rejection(code: .invalidField, field: "event", message: "an event must be a JSON object")
        }
        guard let eventID = raw.eventId.value else {
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
        let materialID = try string(raw.materialId, "materialId")
        let sessionID = try string(raw.clientSessionId, "clientSessionId")
        let knowledgeBaseID = raw.knowledgeBaseId.isAbsent ? nil : try string(raw.knowledgeBaseId, "knowledgeBaseId")
        let position = try self.position(raw.position)
        guard let delta = raw.activeSecondsDelta.value else {
            throw Rejection(code: .invalidActiveSeconds, field: "activeSecondsDelta",
                            message: "activeSecondsDelta must be an integer within 0…\(ReadingEventUploadItem.activeSecondsDeltaRange.upperBound)")
        }
        let timestamp = try self.timestamp(raw, now: now)
        guard let offset = raw.clientTimezoneOffsetMinutes.value else {
            throw Rejection(code: .invalidTimezone, field: "clientTimezoneOffsetMinutes",
                            message: "clientTimezoneOffsetMinutes must be an integer within −720…840")
        }
        guard let sequence = raw.sequence.value else {
            throw Rejection(code: .invalidField, field: "sequence", message: "sequence must be a non-negative integer")
        }
        return ReadingEventUploadItem(
            eventId: eventID, clientSessionId: sessionID, readingTargetType: target, materialId: materialID,
            knowledgeBaseId: knowledgeBaseID, eventType: eventType, position: position, activeSecondsDelta: delta,
            clientTimestamp: timestamp, clientTimezoneOffsetMinutes: offset, sequence: sequence,
            platform: try string(raw.platform, "platform"), appVersion: try string(raw.appVersion, "appVersion"))
    }

    // MARK: - Fields

    /// A string field; what it may hold is the record's rule.
    private func string(_ value: RawReadingEvent.Field<String>, _ name: String) throws -> String {
        guard let text = value.value else {
            throw Rejection(code: .invalidField, field: name, message: "\(name) must be a string")
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

    /// A position object as sent, or nil when absent; whether it is one this system can keep
    /// (and whether `positionChanged` has one) is the record's rule.
    private func position(_ value: RawReadingEvent.Field<RawReadingEvent.RawPosition>) throws -> ReadingPosition? {
        let invalid = ReadingEventUploadItem.invalidPosition
        if value.isAbsent { return nil }
        guard let raw = value.value, !raw.unkeepable else { throw invalid }
        func get<T>(_ field: RawReadingEvent.Field<T>) throws -> T? {
            switch field {
            case .missing, .null: return nil
            case .invalid: throw invalid
            case .value(let v): return v
            }
        }
        return ReadingPosition(page: try get(raw.page), totalPages: try get(raw.totalPages),
                               progress: try get(raw.progress), scrollOffset: try get(raw.scrollOffset),
                               contentLength: try get(raw.contentLength), anchor: try get(raw.anchor), extra: raw.extra)
    }
}
