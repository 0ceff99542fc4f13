import Foundation
import JSON
import JSONReader

/// The streaming reader behind `RawReadingEvent.parseBatch`, `RawReadingEvent.parse` and
/// `ReadingPosition(json:)`: `JSONTokenReader` (yajl's event parser: UTF-8 validated, whole
/// input consumed) hands its tokens to a reader that fills `RawReadingEvent`s field by field as
/// they arrive; values of unknown keys are skipped, except a position's, which are kept as sent.
public enum ReadingEventJSON {
    /// The bytes are not JSON, or not of the expected shape (`{"events":[…]}` for a batch,
    /// an object for a record).
    public struct Error: Swift.Error, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// What the top-level value is.
    enum Shape {
        /// `{"events":[…]}`: an upload body.
        case batch
        /// One event object: a Kafka record value.
        case record
        /// One position object (a stored `last_position`): read into the `position` of the one event returned.
        case position
    }

    static func parse(_ bytes: [UInt8], shape: Shape) throws(Error) -> [RawReadingEvent] {
        let reader = Reader(shape: shape)
        do throws(JSONTokenReader.SyntaxError) {
            try JSONTokenReader.read(bytes, into: reader)
        } catch {
            throw Error(error.description)
        }
        if let failure = reader.failure { throw Error(failure) }
        if shape == .batch, !reader.sawEvents { throw Error("the body must be an object with an \"events\" array") }
        return reader.events
    }
}

// MARK: - The reader's state

private enum EventKey: CaseIterable {
    case eventId, clientSessionId, readingTargetType, materialId, knowledgeBaseId, eventType, position
    case activeSecondsDelta, clientTimestamp, clientTimezoneOffsetMinutes, sequence, platform, appVersion
    case schemaVersion, userId, receivedAt

    /// Each key's name, and `timezoneOffsetMinutes` (seed `000_*` §3, §5) for `clientTimezoneOffsetMinutes` (`001_*`).
    static let names: [(name: [UInt8], key: EventKey)] = allCases.map { (Array("\($0)".utf8), $0) }
        + [(Array("timezoneOffsetMinutes".utf8), .clientTimezoneOffsetMinutes)]
}

private enum PositionKey: CaseIterable {
    case page, totalPages, progress, scrollOffset, contentLength, anchor

    static let names: [(name: [UInt8], key: PositionKey)] = allCases.map { (Array("\($0)".utf8), $0) }
}

private final class Reader: JSONTokenHandler {
    enum Container { case top, events, event, position }

    let shape: ReadingEventJSON.Shape
    var events: [RawReadingEvent] = []
    var sawEvents = false
    var failure: String?

    private var stack: [Container] = []
    /// Depth inside a value that is being skipped (unknown key, wrong-typed container).
    private var skipping = 0
    private var topKeyIsEvents = false
    private var eventKey: EventKey?
    private var positionKey: PositionKey?
    private var position = RawReadingEvent.RawPosition()
    /// A position member of a key this system does not interpret: its name, and the containers
    /// of its value being built (kept as sent, up to `ReadingPosition.maxDepth` deep).
    private var extraKey = ""
    private var building: [Building] = []

    private enum Building {
        case object([String: JSONValue], key: String)
        case array([JSONValue])
    }

    init(shape: ReadingEventJSON.Shape) {
        self.shape = shape
        stack.reserveCapacity(4)
    }

    /// Every value token; returns false to stop the parser.
    func value(_ token: JSONToken) -> Bool {
        if skipping > 0 {
            if token.opensContainer { skipping += 1 }
            return true
        }
        if !building.isEmpty {
            build(token)
            return true
        }
        switch stack.last {
        case nil:
            guard case .startObject = token else {
                switch shape {
                case .batch: return fail("the body must be a JSON object")
                case .record: return fail("a record must be a JSON object")
                case .position: return fail("a position must be a JSON object")
                }
            }
            switch shape {
            case .batch:
                stack.append(.top)
            case .record:
                events.append(RawReadingEvent())
                stack.append(.event)
            case .position:
                events.append(RawReadingEvent())
                position = RawReadingEvent.RawPosition()
                stack.append(.position)
            }
        case .top:
            if topKeyIsEvents {
                guard case .startArray = token else { return fail("\"events\" must be an array") }
                sawEvents = true
                events.removeAll(keepingCapacity: true)
                stack.append(.events)
            } else if token.opensContainer {
                skipping = 1
            }
        case .events:
            var event = RawReadingEvent()
            switch token {
            case .startObject:
                stack.append(.event)
            case .startArray:
                event.isObject = false
                skipping = 1
            default:
                event.isObject = false
            }
            events.append(event)
        case .event:
            setEventField(token)
        case .position:
            setPositionField(token)
        }
        return true
    }

    func key(_ text: UnsafeRawBufferPointer) -> Bool {
        guard skipping == 0 else { return true }
        if case .object(let members, _) = building.last {
            building[building.count - 1] = .object(members, key: String(decoding: text, as: UTF8.self))
            return true
        }
        switch stack.last {
        case .top: topKeyIsEvents = text.elementsEqual("events".utf8)
        case .event: eventKey = JSONTokenReader.key(text, in: EventKey.names)
        case .position:
            positionKey = JSONTokenReader.key(text, in: PositionKey.names)
            if positionKey == nil { extraKey = String(decoding: text, as: UTF8.self) }
        default: break
        }
        return true
    }

    func end() -> Bool {
        if skipping > 0 {
            skipping -= 1
            return true
        }
        if let done = building.popLast() {
            switch done {
            case .object(let members, _): place(.object(members))
            case .array(let values): place(.array(values))
            }
            return true
        }
        if stack.popLast() == .position {
            events[events.count - 1].position = .value(position)
        }
        return true
    }

    private func fail(_ message: String) -> Bool {
        failure = message
        return false
    }

    private func setEventField(_ token: JSONToken) {
        guard let key = eventKey else {
            if token.opensContainer { skipping = 1 }
            return
        }
        let i = events.count - 1
        switch key {
        case .eventId: events[i].eventId = string(token)
        case .clientSessionId: events[i].clientSessionId = string(token)
        case .readingTargetType: events[i].readingTargetType = string(token)
        case .materialId: events[i].materialId = string(token)
        case .knowledgeBaseId: events[i].knowledgeBaseId = string(token)
        case .eventType: events[i].eventType = string(token)
        case .platform: events[i].platform = string(token)
        case .appVersion: events[i].appVersion = string(token)
        case .userId: events[i].userId = string(token)
        case .activeSecondsDelta: events[i].activeSecondsDelta = integer(token)
        case .clientTimezoneOffsetMinutes: events[i].clientTimezoneOffsetMinutes = integer(token)
        case .sequence: events[i].sequence = integer(token)
        case .schemaVersion: events[i].schemaVersion = integer(token)
        case .clientTimestamp: events[i].clientTimestamp = timestamp(token)
        case .receivedAt: events[i].receivedAt = timestamp(token)
        case .position:
            switch token {
            case .startObject:
                position = RawReadingEvent.RawPosition()
                stack.append(.position)
            case .null: events[i].position = .null
            default: events[i].position = invalid(token)
            }
        }
    }

    private func setPositionField(_ token: JSONToken) {
        guard let key = positionKey else {
            build(token)
            return
        }
        switch key {
        case .page: position.page = integer(token)
        case .totalPages: position.totalPages = integer(token)
        case .progress: position.progress = double(token)
        case .scrollOffset: position.scrollOffset = double(token)
        case .contentLength: position.contentLength = double(token)
        case .anchor: position.anchor = string(token)
        }
    }

    // MARK: Values kept as sent (a position's other members)

    /// One token of a value being kept: a scalar goes where the innermost container (or the
    /// member) wants it; a container opens a level, past `ReadingPosition.maxDepth` skipped and
    /// the position marked.
    private func build(_ token: JSONToken) {
        switch token {
        case .startObject, .startArray:
            guard building.count < ReadingPosition.maxDepth else {
                position.unkeepable = true
                skipping = 1
                return
            }
            if case .startObject = token { building.append(.object([:], key: "")) } else { building.append(.array([])) }
        case .null: place(.null)
        case .boolean(let value): place(.bool(value))
        case .number(let text):
            guard let number = JSONNumber.double(text) else { position.unkeepable = true; return place(.null) }
            place(.number(number))
        case .string(let text): place(.string(String(decoding: text, as: UTF8.self)))
        }
    }

    /// Puts a finished value into the container being built, or into the position.
    private func place(_ value: JSONValue) {
        // Taken out and put back, so the container is mutated in place, not copied.
        switch building.popLast() {
        case .object(var members, let key)?:
            members[key] = value
            building.append(.object(members, key: key))
        case .array(var values)?:
            values.append(value)
            building.append(.array(values))
        case nil:
            position.extra[extraKey] = value
        }
    }

    // MARK: Typed values (a container in a scalar's place is skipped and marks it invalid)

    private func string(_ token: JSONToken) -> RawReadingEvent.Field<String> {
        switch token {
        case .string(let text): .value(String(decoding: text, as: UTF8.self))
        case .null: .null
        default: invalid(token)
        }
    }

    private func integer(_ token: JSONToken) -> RawReadingEvent.Field<Int> { number(token, JSONNumber.integer) }
    private func double(_ token: JSONToken) -> RawReadingEvent.Field<Double> { number(token, JSONNumber.double) }

    private func number<T>(_ token: JSONToken, _ parse: (UnsafeRawBufferPointer) -> T?) -> RawReadingEvent.Field<T> {
        switch token {
        case .number(let text):
            if let value = parse(text) { return .value(value) }
            return .invalid
        case .null: return .null
        default: return invalid(token)
        }
    }

    private func timestamp(_ token: JSONToken) -> RawReadingEvent.Field<RawReadingEvent.Timestamp> {
        switch token {
        case .string(let text): return .value(.text(String(decoding: text, as: UTF8.self)))
        case .number(let text):
            if let value = JSONNumber.double(text) { return .value(.number(value)) }
            return .invalid
        case .null: return .null
        default: return invalid(token)
        }
    }

    private func invalid<T>(_ token: JSONToken) -> RawReadingEvent.Field<T> {
        if token.opensContainer { skipping = 1 }
        return .invalid
    }
}
