internal import CYAJL
import Foundation

/// One token of a JSON text, as `JSONTokenReader` meets it. The bytes of `number` and `string`
/// are valid only during the call that hands them over.
public enum JSONToken {
    case null
    case boolean(Bool)
    /// A number's text, as yajl validated it (`JSONNumber` reads it).
    case number(UnsafeRawBufferPointer)
    /// A string's UTF-8, escapes resolved.
    case string(UnsafeRawBufferPointer)
    case startObject
    case startArray

    public var opensContainer: Bool {
        switch self {
        case .startObject, .startArray: true
        default: false
        }
    }
}

/// What a JSON text's tokens are handed to, in order. Each call returns false to stop the
/// reading (the handler keeps why).
public protocol JSONTokenHandler: AnyObject {
    /// A scalar, or the start of an object or an array (a member's value follows its `key`).
    func value(_ token: JSONToken) -> Bool
    /// An object member's name, UTF-8 with escapes resolved, valid only during the call.
    func key(_ name: UnsafeRawBufferPointer) -> Bool
    /// The end of the innermost object or array.
    func end() -> Bool
}

/// yajl's event parser over a whole JSON text (UTF-8 validated, the whole input consumed, one
/// top-level value): the tokens go to a handler as they are read, no tree is built.
public enum JSONTokenReader {
    /// The key of `names` spelled by `text` byte for byte: a handler's `key(_:)` finding which
    /// member it is in.
    @inlinable
    public static func key<K>(_ text: UnsafeRawBufferPointer, in names: [(name: [UInt8], key: K)]) -> K? {
        for entry in names where entry.name.count == text.count && entry.name.elementsEqual(text) { return entry.key }
        return nil
    }

    /// The bytes are not JSON: yajl's message.
    public struct SyntaxError: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Reads `bytes` into `handler`: true when the text was read to its end, false when the
    /// handler stopped it.
    @discardableResult
    public static func read(_ bytes: [UInt8], into handler: any JSONTokenHandler) throws(SyntaxError) -> Bool {
        var handler = handler
        let outcome: Outcome = withUnsafeMutablePointer(to: &handler) { context in
            withUnsafePointer(to: callbacks) { callbacks in
                guard let parser = yajl_alloc(callbacks, nil, context) else { return .malformed(nil) }
                defer { yajl_free(parser) }
                var status = bytes.withUnsafeBufferPointer { yajl_parse(parser, $0.baseAddress, $0.count) }
                if status == yajl_status_ok { status = yajl_complete_parse(parser) }
                switch status {
                case yajl_status_ok: return .read
                case yajl_status_client_canceled: return .stopped
                default:
                    let message = bytes.withUnsafeBufferPointer { yajl_get_error(parser, 0, $0.baseAddress, $0.count) }
                    defer { yajl_free_error(parser, message) }
                    return .malformed(message.map { String(cString: $0) })
                }
            }
        }
        switch outcome {
        case .read: return true
        case .stopped: return false
        case .malformed(let message):
            throw SyntaxError(description: message?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "malformed JSON")
        }
    }

    private enum Outcome {
        case read, stopped
        case malformed(String?)
    }

    // MARK: - Callbacks

    private static func handler(_ context: UnsafeMutableRawPointer?) -> any JSONTokenHandler {
        context!.assumingMemoryBound(to: (any JSONTokenHandler).self).pointee
    }

    private static func result(_ proceed: Bool) -> Int32 { proceed ? 1 : 0 }

    private static let callbacks: yajl_callbacks = {
        var c = yajl_callbacks()
        c.yajl_null = { result(handler($0).value(.null)) }
        c.yajl_boolean = { context, value in result(handler(context).value(.boolean(value != 0))) }
        c.yajl_number = { context, text, length in
            result(handler(context).value(.number(UnsafeRawBufferPointer(start: text, count: length))))
        }
        c.yajl_string = { context, text, length in
            result(handler(context).value(.string(UnsafeRawBufferPointer(start: text, count: length))))
        }
        c.yajl_start_map = { result(handler($0).value(.startObject)) }
        c.yajl_map_key = { context, text, length in
            result(handler(context).key(UnsafeRawBufferPointer(start: text, count: length)))
        }
        c.yajl_end_map = { result(handler($0).end()) }
        c.yajl_start_array = { result(handler($0).value(.startArray)) }
        c.yajl_end_array = { result(handler($0).end()) }
        return c
    }()
}
