import Contracts
import Foundation
import JSON
import JSONReader

/// A `reading.progress.v1` record value read straight from its bytes with the yajl token reader,
/// when it is plainly what the progress projector writes; nil otherwise, and the caller then
/// decodes it with `ContractCoding` (`JSONDecoder`), which accepts or refuses it as it always did.
///
/// The reader takes a record only where it is sure `JSONDecoder` takes it too and gives the same
/// value: an object; each field of `ReadingProgressChanged` at most once, of its type (`null` for
/// the optional ones); integers as plain digits, other numbers as decimals whose value is normal
/// (or a plain zero); `lastReadAt` a timestamp string `ContractCoding.parseTimestamp` reads;
/// `lastPosition` `null` or an object whose other members (kept as sent) nest at most
/// `maxDepth` deep with no repeated key (`String` equality: canonical equivalents are one key, as
/// in the dictionary `JSONDecoder` fills); no backslash anywhere in the text (so every string is
/// its bytes); UTF-8 valid. The field names are matched by their bytes: none holds a letter that
/// a non-ASCII one is canonically equivalent to (only K, `;` and `` ` `` have such), so that is
/// `JSONDecoder`'s match too. Anything else — an escape, a number out of range or past its
/// type, a repeated key, a missing field, a wrong type, nesting past `maxDepth`, not JSON at
/// all — goes to `JSONDecoder`, which stays the judge of every record it refuses.
enum ProgressRecordJSON {
    /// How deep a kept value (a position's other members, a sequenced event's payload) or a
    /// skipped one may nest here (`ReadingPosition.maxDepth` is what the projector takes);
    /// deeper ones go to `JSONDecoder`.
    static let maxDepth = 16

    static func change(_ bytes: [UInt8]) -> ReadingProgressChanged? {
        guard isPlainText(bytes) else { return nil }
        let reader = ProgressRecordReader()
        guard (try? JSONTokenReader.read(bytes, into: reader)) == true else { return nil }
        return reader.change
    }

    /// No backslash (so every string is its bytes) and valid UTF-8: the text the readers here
    /// take; any other goes to `JSONDecoder`.
    static func isPlainText(_ bytes: [UInt8]) -> Bool {
        var ascii = true
        for byte in bytes {
            if byte == UInt8(ascii: "\\") { return false }
            if byte >= 0x80 { ascii = false }
        }
        return ascii || bytes.withUnsafeBufferPointer({ String(validating: $0, as: UTF8.self) }) != nil
    }

    /// A string's bytes (the text was checked as UTF-8 as a whole; no escapes).
    static func string(_ bytes: UnsafeRawBufferPointer) -> String? {
        String(decoding: bytes, as: UTF8.self)
    }

    /// Digits with an optional `-`, at most 19 characters, no leading zero: an `Int` (or nil on
    /// overflow), read as `JSONDecoder` reads it.
    static func integer(_ text: UnsafeRawBufferPointer) -> Int? {
        guard text.count <= 19, isPlain(text, fraction: false) else { return nil }
        return JSONNumber.integer(text)
    }

    /// A decimal (no leading zero; an exponent as `JSONEncoder` writes one, `1e-07`) of at most
    /// 24 characters whose value is normal, or a plain zero: one `JSONDecoder` reads to the same
    /// `Double` (it refuses what underflows to zero or overflows).
    static func double(_ text: UnsafeRawBufferPointer) -> Double? {
        guard text.count <= 24 else { return nil }
        var mantissa = text[...]
        if let e = text.firstIndex(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) {
            mantissa = text[..<e]
            var exponent = text[(e + 1)...]
            if let sign = exponent.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") { exponent = exponent.dropFirst() }
            guard !exponent.isEmpty, exponent.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }) else { return nil }
        }
        guard isPlain(UnsafeRawBufferPointer(rebasing: mantissa), fraction: true), let value = JSONNumber.double(text) else { return nil }
        if value == 0 {
            return mantissa.count == text.count && text.allSatisfy({ $0 == UInt8(ascii: "0") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") })
                ? value : nil
        }
        return value.isNormal ? value : nil
    }

    /// `-`? digits, with a `.` and more digits when `fraction`; the first digit not a `0` followed by another.
    static func isPlain(_ text: UnsafeRawBufferPointer, fraction: Bool) -> Bool {
        var digits = text[...]
        if digits.first == UInt8(ascii: "-") { digits = digits.dropFirst() }
        guard let first = digits.first, first &- UInt8(ascii: "0") < 10 else { return false }
        if first == UInt8(ascii: "0"), let next = digits.dropFirst().first, next &- UInt8(ascii: "0") < 10 { return false }
        var dots = 0
        for byte in digits where byte &- UInt8(ascii: "0") >= 10 {
            guard fraction, byte == UInt8(ascii: "."), dots == 0 else { return false }
            dots += 1
        }
        return digits.last.map { $0 &- UInt8(ascii: "0") < 10 } ?? false
    }
}

private enum ChangeKey: CaseIterable {
    case schemaVersion, userId, materialId, status, lastPosition, progressPercent, totalActiveSeconds, lastReadAt, lastSessionId

    static let names: [(name: [UInt8], key: ChangeKey)] = allCases.map { (Array("\($0)".utf8), $0) }
}

private enum PositionKey: CaseIterable {
    case page, totalPages, progress, scrollOffset, contentLength, anchor

    static let names: [(name: [UInt8], key: PositionKey)] = allCases.map { (Array("\($0)".utf8), $0) }
}


/// Fills a `ReadingProgressChanged` as the tokens arrive; stops (and the record goes to
/// `JSONDecoder`) at the first thing it is not sure of.
private final class ProgressRecordReader: JSONTokenHandler {
    private enum Place { case start, record, position, done }

    private var at = Place.start
    private var skipped = SkippedMember()
    private var recordKey: ChangeKey?
    private var positionKey: PositionKey?
    private var seen: [ChangeKey] = []
    private var seenInPosition: [PositionKey] = []

    private var schemaVersion: Int?
    private var userId: String?
    private var materialId: String?
    private var status: ReadingStatus?
    private var lastPosition: ReadingPosition?
    private var progressPercent: Double?
    private var totalActiveSeconds: Int?
    private var lastReadAt: Date?
    private var lastSessionId: String?

    private var position = ReadingPosition()
    /// A position member of a key this system does not interpret: its name, and its value being built.
    private var extraKey = ""
    private var builder = PlainValueBuilder()

    /// The record, when it was read to its end with every required field.
    var change: ReadingProgressChanged? {
        guard at == .done, let schemaVersion, let userId, let materialId, let status, let progressPercent,
              let totalActiveSeconds else { return nil }
        var change = ReadingProgressChanged(userId: userId, materialId: materialId, status: status, lastPosition: lastPosition,
                                            progressPercent: progressPercent, totalActiveSeconds: totalActiveSeconds,
                                            lastReadAt: lastReadAt, lastSessionId: lastSessionId)
        change.schemaVersion = schemaVersion
        return change
    }

    func value(_ token: JSONToken) -> Bool {
        if skipped.isActive { return skipped.value(token) }
        if builder.isBuilding { return keep(builder.value(token)) }
        switch at {
        case .start:
            guard case .startObject = token else { return false }
            at = .record
            return true
        case .record:
            guard let key = recordKey else {
                skipped.skip(token)
                return true
            }
            return setRecordField(key, token)
        case .position:
            guard let key = positionKey else { return keep(builder.value(token)) }
            return setPositionField(key, token)
        case .done:
            return false
        }
    }

    func key(_ text: UnsafeRawBufferPointer) -> Bool {
        guard !skipped.isActive else { return true }
        if builder.isBuilding { return builder.key(text) }
        switch at {
        case .record:
            recordKey = JSONTokenReader.key(text, in: ChangeKey.names)
            if let key = recordKey {
                guard !seen.contains(key) else { return false }
                seen.append(key)
            }
        case .position:
            positionKey = JSONTokenReader.key(text, in: PositionKey.names)
            if let key = positionKey {
                guard !seenInPosition.contains(key) else { return false }
                seenInPosition.append(key)
            } else {
                extraKey = String(decoding: text, as: UTF8.self)
            }
        default:
            return false
        }
        return true
    }

    func end() -> Bool {
        if skipped.isActive { return skipped.end() }
        if builder.isBuilding { return keep(builder.end()) }
        switch at {
        case .position:
            lastPosition = position
            at = .record
        case .record:
            at = .done
        default:
            return false
        }
        return true
    }

    private func setRecordField(_ key: ChangeKey, _ token: JSONToken) -> Bool {
        switch (key, token) {
        case (.schemaVersion, .number(let text)): schemaVersion = ProgressRecordJSON.integer(text); return schemaVersion != nil
        case (.totalActiveSeconds, .number(let text)): totalActiveSeconds = ProgressRecordJSON.integer(text); return totalActiveSeconds != nil
        case (.progressPercent, .number(let text)): progressPercent = ProgressRecordJSON.double(text); return progressPercent != nil
        case (.userId, .string(let text)): userId = ProgressRecordJSON.string(text); return userId != nil
        case (.materialId, .string(let text)): materialId = ProgressRecordJSON.string(text); return materialId != nil
        case (.lastSessionId, .string(let text)): lastSessionId = ProgressRecordJSON.string(text); return lastSessionId != nil
        case (.status, .string(let text)):
            status = ProgressRecordJSON.string(text).flatMap(ReadingStatus.init(rawValue:))
            return status != nil
        case (.lastReadAt, .string(let text)):
            lastReadAt = ProgressRecordJSON.string(text).flatMap(ContractCoding.parseTimestamp)
            return lastReadAt != nil
        case (.lastPosition, .startObject):
            at = .position
            return true
        case (.lastPosition, .null), (.lastReadAt, .null), (.lastSessionId, .null):
            return true
        default:
            return false
        }
    }

    private func setPositionField(_ key: PositionKey, _ token: JSONToken) -> Bool {
        switch (key, token) {
        case (_, .null): return true
        case (.page, .number(let text)): position.page = ProgressRecordJSON.integer(text); return position.page != nil
        case (.totalPages, .number(let text)): position.totalPages = ProgressRecordJSON.integer(text); return position.totalPages != nil
        case (.progress, .number(let text)): position.progress = ProgressRecordJSON.double(text); return position.progress != nil
        case (.scrollOffset, .number(let text)):
            position.scrollOffset = ProgressRecordJSON.double(text)
            return position.scrollOffset != nil
        case (.contentLength, .number(let text)):
            position.contentLength = ProgressRecordJSON.double(text)
            return position.contentLength != nil
        case (.anchor, .string(let text)): position.anchor = ProgressRecordJSON.string(text); return position.anchor != nil
        default: return false
        }
    }

    /// A position member kept as sent: put in the position once its value is complete (a key
    /// met twice stops the reading).
    private func keep(_ step: PlainValueBuilder.Step) -> Bool {
        switch step {
        case .failed: return false
        case .more: return true
        case .done(let value): return position.extra.updateValue(value, forKey: extraKey) == nil
        }
    }
}

/// Builds a `JSONValue` from tokens with the readers' rules: numbers as
/// `ProgressRecordJSON.double` reads them, at most `ProgressRecordJSON.maxDepth` containers
/// deep, no key twice in an object (anything else fails, and the record goes to `JSONDecoder`,
/// which decodes a `JSONValue` to the same value or refuses it).
/// An unknown member of a record, read past: how deep inside its value the reader is. A scalar
/// needs nothing; a container is read to its end, at most `ProgressRecordJSON.maxDepth` deep.
struct SkippedMember {
    private var depth = 0

    var isActive: Bool { depth > 0 }

    /// The member's value begins with `token`.
    mutating func skip(_ token: JSONToken) {
        if token.opensContainer { depth = 1 }
    }

    /// A token inside the value: false past the depth bound.
    mutating func value(_ token: JSONToken) -> Bool {
        if token.opensContainer { depth += 1 }
        return depth <= ProgressRecordJSON.maxDepth
    }

    /// A container inside the value (or the value itself) ends.
    mutating func end() -> Bool {
        depth -= 1
        return true
    }
}

struct PlainValueBuilder {
    enum Step {
        case failed
        /// A container is open: more tokens to come.
        case more
        case done(JSONValue)
    }

    private enum Building {
        case object([String: JSONValue], key: String)
        case array([JSONValue])
    }

    private var building: [Building] = []

    /// A container is open.
    var isBuilding: Bool { !building.isEmpty }

    mutating func value(_ token: JSONToken) -> Step {
        switch token {
        case .startObject, .startArray:
            guard building.count < ProgressRecordJSON.maxDepth else { return .failed }
            if case .startObject = token { building.append(.object([:], key: "")) } else { building.append(.array([])) }
            return .more
        case .null: return place(.null)
        case .boolean(let value): return place(.bool(value))
        case .number(let text):
            guard let number = ProgressRecordJSON.double(text) else { return .failed }
            return place(.number(number))
        case .string(let text):
            return place(.string(String(decoding: text, as: UTF8.self)))
        }
    }

    /// A member's name in the object being built.
    mutating func key(_ text: UnsafeRawBufferPointer) -> Bool {
        guard case .object(let members, _) = building.last else { return false }
        building[building.count - 1] = .object(members, key: String(decoding: text, as: UTF8.self))
        return true
    }

    mutating func end() -> Step {
        switch building.popLast() {
        case .object(let members, _)?: return place(.object(members))
        case .array(let values)?: return place(.array(values))
        case nil: return .failed
        }
    }

    /// Puts a finished value into the container being built, or hands it back when it is the whole value.
    private mutating func place(_ value: JSONValue) -> Step {
        // Taken out and put back, so the container is mutated in place, not copied.
        switch building.popLast() {
        case .object(var members, let key)?:
            guard members.updateValue(value, forKey: key) == nil else { return .failed }
            building.append(.object(members, key: key))
            return .more
        case .array(var values)?:
            values.append(value)
            building.append(.array(values))
            return .more
        case nil:
            return .done(value)
        }
    }
}
