import Foundation
import JSON
import ServiceLogging

/// The value of a `realtime.broadcasts.v1` record (key: `channel`): any producer can ask
/// the notifier to broadcast `event` with `payload` (a JSON object) on `channel`
/// (`room:{id}` or `user:{id}`).
public struct RealtimeBroadcast: Sendable, Hashable, Codable {
    public var schemaVersion: Int?
    public var channel: String
    public var event: String
    public var payload: JSONValue
    /// Optional sender tag (a notifier socket): the notifier does not echo a client's own
    /// broadcast back to it unless it asked for `self`.
    public var origin: String?

    public init(channel: String, event: String, payload: JSONValue, schemaVersion: Int? = 1, origin: String? = nil) {
        self.schemaVersion = schemaVersion
        self.channel = channel
        self.event = event
        self.payload = payload
        self.origin = origin
    }
}

/// A channel event after the notifier's sequencer numbered it: the value of a
/// `realtime.sequenced.v1` record (key: `channel`), and a row of the channel history.
public struct SequencedChannelEvent: Sendable, Hashable, Codable {
    public var channel: String
    public var seq: Int64
    public var event: String
    public var payload: JSONValue
    public var createdAt: Date
    /// The `origin` of the broadcast it came from, if any (not kept in the history).
    public var origin: String?
    /// The trace of the record it came from: travels in the `traceparent` header, not in the value.
    public var trace: TraceContext?

    enum CodingKeys: String, CodingKey {
        case channel, seq, event, payload, createdAt, origin
    }

    public init(channel: String, seq: Int64, event: String, payload: JSONValue, createdAt: Date, origin: String? = nil,
                trace: TraceContext? = nil) {
        self.channel = channel
        self.seq = seq
        self.event = event
        self.payload = payload
        self.createdAt = createdAt
        self.origin = origin
        self.trace = trace
    }
}

/// `GET /realtime/v1/channels/{channel}/events?after=SEQ`.
public struct ChannelEventsResponse: Sendable, Hashable, Codable {
    public var channel: String
    public var events: [SequencedChannelEvent]
    /// The oldest sequence still kept; a client whose `after` is below `oldestSeq - 1` missed events.
    public var oldestSeq: Int64?
    public var latestSeq: Int64?
    /// True when events after `after` were already trimmed from the history.
    public var truncated: Bool

    public init(channel: String, events: [SequencedChannelEvent], oldestSeq: Int64?, latestSeq: Int64?, truncated: Bool) {
        self.channel = channel
        self.events = events
        self.oldestSeq = oldestSeq
        self.latestSeq = latestSeq
        self.truncated = truncated
    }
}

/// The value of a `<topic>.dlq` record: the poison record and why it was set aside.
public struct DeadLetterRecord: Sendable, Hashable, Codable {
    public var schemaVersion: Int
    public var originalTopic: String
    public var partition: Int32
    public var offset: Int64
    public var consumerGroup: String
    public var error: String
    /// The original key and value as UTF-8 text when they are, else base64 (`keyEncoding`,
    /// `valueEncoding`: "base64"); `keyOriginal`/`valueOriginal` give the bytes back.
    public var key: String?
    /// "base64" when the key was not UTF-8; absent otherwise (and in records written before it).
    public var keyEncoding: String?
    public var value: String
    public var valueEncoding: String
    public var failedAt: Date

    public init(originalTopic: String, partition: Int32, offset: Int64, consumerGroup: String, error: String,
                key: [UInt8]?, value: [UInt8], failedAt: Date) {
        self.schemaVersion = 1
        self.originalTopic = originalTopic
        self.partition = partition
        self.offset = offset
        self.consumerGroup = consumerGroup
        self.error = error
        if let key {
            let (text, encoding) = Self.text(of: key)
            self.key = text
            self.keyEncoding = encoding == "base64" ? encoding : nil
        }
        (self.value, self.valueEncoding) = Self.text(of: value)
        self.failedAt = failedAt
    }

    /// The original key's bytes (nil without a key, or when its base64 does not decode).
    public var keyOriginal: [UInt8]? { key.flatMap { Self.bytes(of: $0, encoding: keyEncoding) } }

    /// The original value's bytes (nil when its base64 does not decode).
    public var valueOriginal: [UInt8]? { Self.bytes(of: value, encoding: valueEncoding) }

    private static func text(of bytes: [UInt8]) -> (String, String) {
        if let text = String(validating: bytes, as: UTF8.self) { return (text, "utf8") }
        return (Data(bytes).base64EncodedString(), "base64")
    }

    private static func bytes(of text: String, encoding: String?) -> [UInt8]? {
        encoding == "base64" ? Data(base64Encoded: text).map(Array.init) : Array(text.utf8)
    }
}
