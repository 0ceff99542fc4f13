import Contracts
import Foundation
import JSON
import JSONReader

/// The `realtime.sequenced.v1` record value without Foundation's coders: `SequencedPublisher`
/// writes it with `JSONWriter`, `LiveEventConsumer` reads it with yajl's token reader when it
/// is plainly what the publisher writes (the rules of `ProgressRecordJSON`: no escape, valid
/// UTF-8, each field once and of its type, numbers `JSONDecoder` reads to the same value, the
/// payload nested at most `ProgressRecordJSON.maxDepth` deep with no repeated key) and with
/// `JSONDecoder` otherwise, which accepts and refuses as it always did.
public enum SequencedEventJSON {
    /// The record value, byte for byte what `ContractCoding.encode(event)` writes; an event whose
    /// payload holds a number that is not finite goes to `ContractCoding.encode`, which refuses it.
    public static func value(_ event: SequencedChannelEvent) throws -> [UInt8] {
        guard event.payload.isFinite else { return try ContractCoding.encode(event) }
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("channel"); w.string(event.channel)
        w.key("createdAt"); w.timestamp(event.createdAt)
        w.key("event"); w.string(event.event)
        w.string("origin", event.origin)
        w.key("payload"); w.value(event.payload)
        w.key("seq"); w.int(Int(event.seq))
        w.endObject()
        return w.bytes
    }

    /// The event of a record value (no trace: it travels in the headers).
    public static func event(_ bytes: [UInt8]) throws -> SequencedChannelEvent {
        if let event = plainEvent(bytes) { return event }
        return try ContractCoding.decode(SequencedChannelEvent.self, from: bytes)
    }

    /// The event when the token reader is sure of it; nil sends the record to `JSONDecoder`.
    static func plainEvent(_ bytes: [UInt8]) -> SequencedChannelEvent? {
        guard ProgressRecordJSON.isPlainText(bytes) else { return nil }
        let reader = SequencedEventReader()
        guard (try? JSONTokenReader.read(bytes, into: reader)) == true else { return nil }
        return reader.event
    }
}

private enum EventKey: CaseIterable {
    case channel, seq, event, payload, createdAt, origin

    static let names: [(name: [UInt8], key: EventKey)] = allCases.map { (Array("\($0)".utf8), $0) }
}

/// Fills a `SequencedChannelEvent` as the tokens arrive; stops at the first thing it is not sure of.
private final class SequencedEventReader: JSONTokenHandler {
    private enum Place { case start, record, done }

    private var at = Place.start
    private var skipped = SkippedMember()
    private var key: EventKey?
    private var seen: [EventKey] = []
    private var builder = PlainValueBuilder()

    private var channel: String?
    private var seq: Int64?
    private var name: String?
    private var payload: JSONValue?
    private var createdAt: Date?
    private var origin: String?

    var event: SequencedChannelEvent? {
        guard at == .done, let channel, let seq, let name, let payload, let createdAt else { return nil }
        return SequencedChannelEvent(channel: channel, seq: seq, event: name, payload: payload, createdAt: createdAt, origin: origin)
    }

    func value(_ token: JSONToken) -> Bool {
        if skipped.isActive { return skipped.value(token) }
        if builder.isBuilding { return take(builder.value(token)) }
        switch at {
        case .start:
            guard case .startObject = token else { return false }
            at = .record
            return true
        case .record:
            guard let key else {
                skipped.skip(token)
                return true
            }
            switch (key, token) {
            case (.channel, .string(let text)): channel = String(decoding: text, as: UTF8.self)
            case (.event, .string(let text)): name = String(decoding: text, as: UTF8.self)
            case (.origin, .string(let text)): origin = String(decoding: text, as: UTF8.self)
            case (.origin, .null): break
            case (.seq, .number(let text)):
                guard let value = ProgressRecordJSON.integer(text) else { return false }
                seq = Int64(value)
            case (.createdAt, .string(let text)):
                guard let date = ContractCoding.parseTimestamp(String(decoding: text, as: UTF8.self)) else { return false }
                createdAt = date
            case (.payload, .null): return false
            case (.payload, _): return take(builder.value(token))
            default: return false
            }
            return true
        case .done:
            return false
        }
    }

    func key(_ text: UnsafeRawBufferPointer) -> Bool {
        guard !skipped.isActive else { return true }
        if builder.isBuilding { return builder.key(text) }
        guard at == .record else { return false }
        key = JSONTokenReader.key(text, in: EventKey.names)
        if let key {
            guard !seen.contains(key) else { return false }
            seen.append(key)
        }
        return true
    }

    func end() -> Bool {
        if skipped.isActive { return skipped.end() }
        if builder.isBuilding { return take(builder.end()) }
        guard at == .record else { return false }
        at = .done
        return true
    }

    private func take(_ step: PlainValueBuilder.Step) -> Bool {
        switch step {
        case .failed: return false
        case .more: return true
        case .done(let value):
            payload = value
            return true
        }
    }
}
