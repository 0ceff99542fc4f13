import Foundation
import JSON

/// One reading-event JSON object read leniently: every known field is read with its exact
/// type, and a field that is missing, null or of the wrong type is recorded as such instead
/// of failing the whole document — ingest's validator turns that into the event's own
/// rejection code, and `ReadingEventRecord.init(json:)` into a decoding error.
///
/// Read by `ReadingEventJSON` (a streaming parser on yajl) straight from the bytes, without
/// `Decodable` containers: this is the hot path of ingest and of every projection.
public struct RawReadingEvent: Sendable {
    public enum Field<T: Sendable>: Sendable {
        case missing, null, invalid
        case value(T)

        public var value: T? { if case .value(let v) = self { return v }; return nil }
        public var isAbsent: Bool {
            switch self {
            case .missing, .null: true
            default: false
            }
        }
    }

    /// A timestamp as sent: ISO-8601 text or a number.
    ///
    /// A number is epoch milliseconds, epoch seconds (`JSONEncoder`'s `.secondsSince1970`) or
    /// seconds since 2001-01-01 (its default, `.deferredToDate`). `date(near:ahead:behind:)`
    /// picks the one form that lands inside the accepted window around `now`: the three
    /// readings of one number lie at least 31 years (or a factor of 1000) apart, so at most one
    /// can fall in a window of 30 days. Without a window (`date`) a number is milliseconds.
    public enum Timestamp: Sendable {
        case text(String)
        case number(Double)

        /// Seconds between 1970-01-01 and 2001-01-01 (Foundation's reference date).
        public static let referenceDateOffset: Double = 978_307_200

        /// The instant, if the text parses or the number is finite milliseconds within
        /// `ContractCoding.timestampRange`.
        public var date: Date? {
            switch self {
            case .text(let text): ContractCoding.parseTimestamp(text)
            case .number(let millis): ContractCoding.date(secondsSince1970: millis / 1000)
            }
        }

        /// The instant within `now - behind ... now + ahead`, reading a number in whichever of
        /// the three forms lands there; nil when none does (or the text does not parse, or
        /// its instant is outside the window).
        public func date(near now: Date, ahead: TimeInterval, behind: TimeInterval) -> Date? {
            let window = now.addingTimeInterval(-behind)...now.addingTimeInterval(ahead)
            switch self {
            case .text:
                return date.flatMap { window.contains($0) ? $0 : nil }
            case .number(let value):
                let candidates = [value / 1000, value, value + Self.referenceDateOffset]
                return candidates.lazy.compactMap { ContractCoding.date(secondsSince1970: $0) }.first { window.contains($0) }
            }
        }
    }

    /// A position object: the values of the keys this system recognises, and the others as sent.
    public struct RawPosition: Sendable {
        public var page: Field<Int> = .missing
        public var totalPages: Field<Int> = .missing
        public var progress: Field<Double> = .missing
        public var scrollOffset: Field<Double> = .missing
        public var contentLength: Field<Double> = .missing
        public var anchor: Field<String> = .missing
        public var extra: [String: JSONValue] = [:]
        /// A member that cannot be kept: nested deeper than `ReadingPosition.maxDepth`, or a
        /// number beyond a double's range.
        public var unkeepable = false
    }

    /// False when the item is not a JSON object at all.
    public var isObject = true
    public var eventId: Field<String> = .missing
    public var clientSessionId: Field<String> = .missing
    public var readingTargetType: Field<String> = .missing
    public var materialId: Field<String> = .missing
    public var knowledgeBaseId: Field<String> = .missing
    public var eventType: Field<String> = .missing
    public var position: Field<RawPosition> = .missing
    public var activeSecondsDelta: Field<Int> = .missing
    public var clientTimestamp: Field<Timestamp> = .missing
    public var clientTimezoneOffsetMinutes: Field<Int> = .missing
    public var sequence: Field<Int> = .missing
    public var platform: Field<String> = .missing
    public var appVersion: Field<String> = .missing
    // Set by ingest on the Kafka record only.
    public var schemaVersion: Field<Int> = .missing
    public var userId: Field<String> = .missing
    public var receivedAt: Field<Timestamp> = .missing

    public init() {}

    public var rawEventID: String? { eventId.value }

    /// The events of a `{"events":[…]}` upload body.
    public static func parseBatch(_ bytes: [UInt8]) throws(ReadingEventJSON.Error) -> [RawReadingEvent] {
        try ReadingEventJSON.parse(bytes, shape: .batch)
    }

    /// One event object (a Kafka record value).
    public static func parse(_ bytes: [UInt8]) throws(ReadingEventJSON.Error) -> RawReadingEvent {
        try ReadingEventJSON.parse(bytes, shape: .record)[0]
    }

    /// The same event from a `JSONValue` (tests, tools).
    public init(_ value: JSONValue) {
        guard case .object = value, let bytes = try? ContractCoding.encode(value),
              let event = try? Self.parse(bytes) else {
            isObject = false
            return
        }
        self = event
    }
}

extension ReadingEventRecord {
    /// Decodes a `reading.events.v2` record value: the same rules as its `Decodable`
    /// conformance (required fields present with their types; unknown keys ignored), several
    /// times faster.
    public init(json bytes: [UInt8]) throws(ReadingEventJSON.Error) {
        let raw = try RawReadingEvent.parse(bytes)
        func required<T>(_ field: RawReadingEvent.Field<T>, _ name: String) throws(ReadingEventJSON.Error) -> T {
            guard case .value(let value) = field else { throw .init("\(name): \(Self.describe(field))") }
            return value
        }
        func optional<T>(_ field: RawReadingEvent.Field<T>, _ name: String) throws(ReadingEventJSON.Error) -> T? {
            if case .invalid = field { throw .init("\(name): value of the wrong type") }
            return field.value
        }
        func date(_ field: RawReadingEvent.Field<RawReadingEvent.Timestamp>, _ name: String) throws(ReadingEventJSON.Error) -> Date {
            guard let date = try required(field, name).date else { throw .init("\(name): not an ISO-8601 timestamp or epoch milliseconds") }
            return date
        }
        func enumeration<T: RawRepresentable>(_ field: RawReadingEvent.Field<String>, _ name: String) throws(ReadingEventJSON.Error) -> T
        where T.RawValue == String {
            let text = try required(field, name)
            guard let value = T(rawValue: text) else { throw .init("\(name): unknown value \"\(text)\"") }
            return value
        }
        let position = try optional(raw.position, "position").map { (p) throws(ReadingEventJSON.Error) in
            try ReadingPosition(p, field: "position")
        }
        let item = ReadingEventUploadItem(
            eventId: try required(raw.eventId, "eventId"), clientSessionId: try required(raw.clientSessionId, "clientSessionId"),
            readingTargetType: try enumeration(raw.readingTargetType, "readingTargetType"),
            materialId: try required(raw.materialId, "materialId"),
            knowledgeBaseId: try optional(raw.knowledgeBaseId, "knowledgeBaseId"),
            eventType: try enumeration(raw.eventType, "eventType"), position: position,
            activeSecondsDelta: try required(raw.activeSecondsDelta, "activeSecondsDelta"),
            clientTimestamp: try date(raw.clientTimestamp, "clientTimestamp"),
            clientTimezoneOffsetMinutes: try required(raw.clientTimezoneOffsetMinutes, "clientTimezoneOffsetMinutes"),
            sequence: try required(raw.sequence, "sequence"), platform: try required(raw.platform, "platform"),
            appVersion: try required(raw.appVersion, "appVersion"))
        self.init(userId: try required(raw.userId, "userId"), receivedAt: try date(raw.receivedAt, "receivedAt"), item: item)
        schemaVersion = try required(raw.schemaVersion, "schemaVersion")
    }

    private static func describe<T>(_ field: RawReadingEvent.Field<T>) -> String {
        switch field {
        case .missing: "missing"
        case .null: "null"
        default: "value of the wrong type"
        }
    }

    /// The record value, byte for byte what `ContractCoding.encode(self)` writes.
    public var json: [UInt8] {
        var w = JSONWriter(capacity: 512)
        w.beginObject()
        w.key("activeSecondsDelta"); w.int(event.activeSecondsDelta)
        w.key("appVersion"); w.string(event.appVersion)
        w.key("clientSessionId"); w.string(event.clientSessionId)
        w.key("clientTimestamp"); w.timestamp(event.clientTimestamp)
        w.key("clientTimezoneOffsetMinutes"); w.int(event.clientTimezoneOffsetMinutes)
        w.key("eventId"); w.string(event.eventId)
        w.key("eventType"); w.string(event.eventType.rawValue)
        w.string("knowledgeBaseId", event.knowledgeBaseId)
        w.key("materialId"); w.string(event.materialId)
        w.key("platform"); w.string(event.platform)
        if let position = event.position {
            w.key("position")
            position.write(to: &w)
        }
        w.key("readingTargetType"); w.string(event.readingTargetType.rawValue)
        w.key("receivedAt"); w.timestamp(receivedAt)
        w.key("schemaVersion"); w.int(schemaVersion)
        w.key("sequence"); w.int(event.sequence)
        w.key("userId"); w.string(userId)
        w.endObject()
        return w.bytes
    }
}

extension ReadingPosition {
    /// Decodes a position object (a stored `last_position`): the same rules as its
    /// `Decodable` conformance with `JSONDecoder` (members optional, `null` as absent, a
    /// member of the wrong type an error, unknown keys ignored), without Foundation.
    public init(json bytes: [UInt8]) throws(ReadingEventJSON.Error) {
        guard case .value(let raw) = try ReadingEventJSON.parse(bytes, shape: .position)[0].position else {
            throw ReadingEventJSON.Error("a position must be a JSON object")
        }
        try self.init(raw, field: nil)
    }

    /// The position of a parsed object; a member of the wrong type is an error naming it
    /// (`field.member`).
    init(_ raw: RawReadingEvent.RawPosition, field: String?) throws(ReadingEventJSON.Error) {
        func optional<T>(_ value: RawReadingEvent.Field<T>, _ name: String) throws(ReadingEventJSON.Error) -> T? {
            if case .invalid = value { throw .init("\(field.map { "\($0)." } ?? "")\(name): value of the wrong type") }
            return value.value
        }
        if raw.unkeepable {
            throw .init("\(field.map { "\($0)." } ?? "")a value nested deeper than \(Self.maxDepth) levels, or a number out of range")
        }
        self.init(page: try optional(raw.page, "page"), totalPages: try optional(raw.totalPages, "totalPages"),
                  progress: try optional(raw.progress, "progress"), scrollOffset: try optional(raw.scrollOffset, "scrollOffset"),
                  contentLength: try optional(raw.contentLength, "contentLength"), anchor: try optional(raw.anchor, "anchor"),
                  extra: raw.extra)
    }

    /// As `ContractCoding.encoder` writes it (keys sorted, nil members left out).
    public func write(to w: inout JSONWriter) {
        guard !extra.isEmpty else {
            // The recognised keys alone, already in order (the hot path of ingest's records).
            w.beginObject()
            w.string("anchor", anchor)
            if let contentLength { w.key("contentLength"); w.double(contentLength) }
            if let page { w.key("page"); w.int(page) }
            if let progress { w.key("progress"); w.double(progress) }
            if let scrollOffset { w.key("scrollOffset"); w.double(scrollOffset) }
            if let totalPages { w.key("totalPages"); w.int(totalPages) }
            w.endObject()
            return
        }
        var members = extra
        if let anchor { members["anchor"] = .string(anchor) }
        if let contentLength { members["contentLength"] = .number(contentLength) }
        if let page { members["page"] = .number(Double(page)) }
        if let progress { members["progress"] = .number(progress) }
        if let scrollOffset { members["scrollOffset"] = .number(scrollOffset) }
        if let totalPages { members["totalPages"] = .number(Double(totalPages)) }
        w.value(.object(members))
    }
}

extension ReadingEventBatchResponse {
    /// The 200 body, byte for byte what `ContractCoding.encode(self)` writes.
    public var json: [UInt8] {
        var w = JSONWriter(capacity: 64 + results.count * 64)
        w.beginObject()
        w.key("accepted"); w.int(accepted)
        w.key("duplicates"); w.int(duplicates)
        w.key("rejected"); w.int(rejected)
        w.key("results")
        w.beginArray()
        for result in results {
            w.beginObject()
            w.string("code", result.code?.rawValue)
            w.string("eventId", result.eventId)
            w.string("field", result.field)
            w.string("message", result.message)
            w.key("status"); w.string(result.status.rawValue)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }
}
