import Contracts
import Foundation

/// One uploaded event decoded leniently: every known field is read with its exact type,
/// and a field that is missing, null or of the wrong type is recorded as such instead of
/// failing the batch — the validator turns that into the event's own rejection code.
/// (Decoding straight into typed fields is several times cheaper than `JSONValue`.)
public struct RawReadingEvent: Decodable, Sendable {
    public enum Field<T: Sendable>: Sendable {
        case missing, null, invalid
        case value(T)

        var value: T? { if case .value(let v) = self { return v }; return nil }
        var isAbsent: Bool {
            switch self {
            case .missing, .null: true
            default: false
            }
        }
    }

    /// A position object: its values and whether it had keys outside the three forms.
    public struct RawPosition: Decodable, Sendable {
        var page: Field<Int>
        var totalPages: Field<Int>
        var progress: Field<Double>
        var scrollOffset: Field<Double>
        var contentLength: Field<Double>
        var anchor: Field<String>
        var hasUnknownKeys: Bool

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: AnyKey.self)
            page = field(c, "page")
            totalPages = field(c, "totalPages")
            progress = field(c, "progress")
            scrollOffset = field(c, "scrollOffset")
            contentLength = field(c, "contentLength")
            anchor = field(c, "anchor")
            hasUnknownKeys = c.allKeys.contains { !["page", "totalPages", "progress", "scrollOffset", "contentLength", "anchor"].contains($0.stringValue) }
        }
    }

    public var isObject = true
    var eventId: Field<String> = .missing
    var clientSessionId: Field<String> = .missing
    var readingTargetType: Field<String> = .missing
    var materialId: Field<String> = .missing
    var knowledgeBaseId: Field<String> = .missing
    var eventType: Field<String> = .missing
    var position: Field<RawPosition> = .missing
    var activeSecondsDelta: Field<Int> = .missing
    var clientTimestampText: Field<String> = .missing
    var clientTimestampMillis: Field<Double> = .missing
    var clientTimezoneOffsetMinutes: Field<Int> = .missing
    var sequence: Field<Int> = .missing
    var platform: Field<String> = .missing
    var appVersion: Field<String> = .missing

    public var rawEventID: String? { eventId.value }

    public init(from decoder: any Decoder) throws {
        guard let c = try? decoder.container(keyedBy: AnyKey.self) else {
            isObject = false
            return
        }
        eventId = field(c, "eventId")
        clientSessionId = field(c, "clientSessionId")
        readingTargetType = field(c, "readingTargetType")
        materialId = field(c, "materialId")
        knowledgeBaseId = field(c, "knowledgeBaseId")
        eventType = field(c, "eventType")
        position = field(c, "position")
        activeSecondsDelta = field(c, "activeSecondsDelta")
        clientTimestampText = field(c, "clientTimestamp")
        if case .invalid = clientTimestampText { clientTimestampMillis = field(c, "clientTimestamp") }
        clientTimezoneOffsetMinutes = field(c, "clientTimezoneOffsetMinutes")
        sequence = field(c, "sequence")
        platform = field(c, "platform")
        appVersion = field(c, "appVersion")
    }

    /// The same event from a `JSONValue` (tests, tools).
    public init(_ value: JSONValue) {
        self = (try? value.decode(RawReadingEvent.self)) ?? RawReadingEvent(notAnObject: ())
    }

    private init(notAnObject: Void) { isObject = false }
}

struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// Reads `key` with its exact type without throwing.
func field<T: Decodable & Sendable>(_ c: KeyedDecodingContainer<AnyKey>, _ key: String) -> RawReadingEvent.Field<T> {
    let k = AnyKey(key)
    guard c.contains(k) else { return .missing }
    if (try? c.decodeNil(forKey: k)) == true { return .null }
    do { return .value(try c.decode(T.self, forKey: k)) } catch { return .invalid }
}
