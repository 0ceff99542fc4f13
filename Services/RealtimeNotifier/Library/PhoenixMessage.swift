import Contracts
import Foundation
import JSON

/// The two Phoenix JSON serializers: `1.0.0` (objects) and `2.0.0` (arrays).
public enum PhoenixSerializer: String, Sendable, Hashable, CaseIterable {
    case v1 = "1.0.0"
    case v2 = "2.0.0"

    /// The serializer of a `vsn` query value (missing means `1.0.0`); nil for unknown versions.
    public init?(vsn: String?) {
        guard let vsn, !vsn.isEmpty else {
            self = .v1
            return
        }
        switch vsn {
        case "1.0.0", "1.0": self = .v1
        case "2.0.0", "2.0": self = .v2
        default: return nil
        }
    }
}

/// A frame that is not a Phoenix message.
public struct MalformedFrame: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
}

/// One Phoenix channel message, either direction.
public struct PhoenixMessage: Sendable, Hashable {
    public var joinRef: String?
    public var ref: String?
    public var topic: String
    public var event: String
    public var payload: JSONValue

    public init(joinRef: String? = nil, ref: String? = nil, topic: String, event: String, payload: JSONValue) {
        self.joinRef = joinRef
        self.ref = ref
        self.topic = topic
        self.event = event
        self.payload = payload
    }

    /// Parses a text frame sent by a client.
    public static func decode(_ text: String, serializer: PhoenixSerializer) throws(MalformedFrame) -> PhoenixMessage {
        let value: JSONValue
        do {
            value = try ContractCoding.decoder.decode(JSONValue.self, from: Data(text.utf8))
        } catch {
            throw MalformedFrame(description: "not JSON")
        }
        switch (serializer, value) {
        case (.v1, .object(let object)):
            guard let topic = object["topic"]?.stringValue, let event = object["event"]?.stringValue else {
                throw MalformedFrame(description: "topic and event must be strings")
            }
            return PhoenixMessage(joinRef: ref(object["join_ref"]), ref: ref(object["ref"]), topic: topic, event: event,
                                  payload: object["payload"] ?? .object([:]))
        case (.v2, .array(let items)) where items.count == 5:
            guard let topic = items[2].stringValue, let event = items[3].stringValue else {
                throw MalformedFrame(description: "topic and event must be strings")
            }
            return PhoenixMessage(joinRef: ref(items[0]), ref: ref(items[1]), topic: topic, event: event, payload: items[4])
        case (.v1, _):
            throw MalformedFrame(description: "a 1.0.0 frame is a JSON object")
        case (.v2, _):
            throw MalformedFrame(description: "a 2.0.0 frame is a five-element JSON array")
        }
    }

    /// Refs are strings; numbers are accepted and kept as their text.
    static func ref(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let s): s
        case .number(let n): n == n.rounded() ? String(Int64(n)) : String(n)
        default: nil
        }
    }

    /// The text frame the server sends: v1 `{"event","payload","ref","topic"}` with `ref`
    /// always present (`null` on broadcasts), v2 `[join_ref, ref, topic, event, payload]`.
    public func encode(_ serializer: PhoenixSerializer) -> String {
        let refValue: JSONValue = ref.map(JSONValue.string) ?? .null
        let value: JSONValue
        switch serializer {
        case .v1:
            value = .object(["topic": .string(topic), "event": .string(event), "payload": payload, "ref": refValue])
        case .v2:
            value = .array([joinRef.map(JSONValue.string) ?? .null, refValue, .string(topic), .string(event), payload])
        }
        return Self.json(value)
    }

    /// A payload's JSON text, as the history stores it and the frames carry it: what
    /// `ContractCoding.encoder` writes (`JSONWriter.value`, the same bytes), and `null` for a
    /// value with a number that is not finite (which the encoder refuses).
    public static func json(_ value: JSONValue) -> String {
        guard value.isFinite else { return "null" }
        var writer = JSONWriter(capacity: 256)
        writer.value(value)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

/// The server messages of the protocol.
extension PhoenixMessage {
    /// `phx_reply` with `status: ok`.
    public static func ok(to message: PhoenixMessage, response: JSONValue = .object([:])) -> PhoenixMessage {
        PhoenixMessage(joinRef: message.joinRef, ref: message.ref, topic: message.topic, event: "phx_reply",
                       payload: .object(["status": .string("ok"), "response": response]))
    }

    /// `phx_reply` with `status: error` and a reason.
    public static func error(to message: PhoenixMessage, reason: String) -> PhoenixMessage {
        PhoenixMessage(joinRef: message.joinRef, ref: message.ref, topic: message.topic, event: "phx_reply",
                       payload: .object(["status": .string("error"), "response": .object(["reason": .string(reason)])]))
    }

    /// `phx_close` of a join (ref = join_ref, payload `{}`).
    public static func close(topic: String, joinRef: String?) -> PhoenixMessage {
        PhoenixMessage(joinRef: joinRef, ref: joinRef, topic: topic, event: "phx_close", payload: .object([:]))
    }

    /// A `system` message: all four keys, `ref: null`.
    public static func system(topic: String, channel: String, status: String, message: String, joinRef: String? = nil) -> PhoenixMessage {
        PhoenixMessage(joinRef: joinRef, ref: nil, topic: topic, event: "system", payload: .object([
            "extension": .string("system"), "status": .string(status), "message": .string(message), "channel": .string(channel),
        ]))
    }

    /// The inner payload's keys also given beside `type`, `event` and `payload`. supabase-swift
    /// hands a broadcast handler this object as `msg.payload`, and the seed's handlers read
    /// `msg.payload["status"]`, `["version_id"]`, `["error"]` there (`002_*` §6.2); clients that
    /// read `payload.payload` (supabase-js, the Python `realtime`) find them where they were.
    public static let mirroredKeys = ["status", "version_id", "error"]

    /// A broadcast to the client; `meta.id` is the channel sequence.
    public static func broadcast(topic: String, event: String, payload: JSONValue, seq: Int64?, replayed: Bool) -> PhoenixMessage {
        var meta: [String: JSONValue] = [:]
        if let seq { meta["id"] = .string(String(seq)) }
        if replayed { meta["replayed"] = .bool(true) }
        let inner: JSONValue = payload.objectValue != nil ? payload : .object(["value": payload])
        var body: [String: JSONValue] = ["type": .string("broadcast"), "event": .string(event), "payload": inner]
        for key in mirroredKeys { if let value = inner[key] { body[key] = value } }
        if !meta.isEmpty { body["meta"] = .object(meta) }
        return PhoenixMessage(joinRef: nil, ref: nil, topic: topic, event: "broadcast", payload: .object(body))
    }
}

extension JSONValue {
    /// No number in it is infinite or NaN.
    var isFinite: Bool {
        switch self {
        case .number(let n): n.isFinite
        case .array(let values): values.allSatisfy(\.isFinite)
        case .object(let members): members.values.allSatisfy(\.isFinite)
        default: true
        }
    }
}
