import Foundation

/// A Swift value that can be sent to Postgres as a `$n` parameter (text format).
///
/// `postgresText` is the value's text input representation, or `nil` for SQL NULL. The
/// same text is used for COPY FROM STDIN, where the module adds COPY escaping.
public protocol PostgresBindable: Sendable {
    var postgresText: String? { get }
}

extension String: PostgresBindable {
    public var postgresText: String? { self }
}

extension Int: PostgresBindable {
    public var postgresText: String? { String(self) }
}

extension Int32: PostgresBindable {
    public var postgresText: String? { String(self) }
}

extension Int64: PostgresBindable {
    public var postgresText: String? { String(self) }
}

extension Double: PostgresBindable {
    public var postgresText: String? {
        if isNaN { return "NaN" }
        if isInfinite { return self < 0 ? "-Infinity" : "Infinity" }
        return String(self)
    }
}

extension Bool: PostgresBindable {
    public var postgresText: String? { self ? "true" : "false" }
}

extension Date: PostgresBindable {
    /// ISO-8601 in UTC with microseconds: `2026-01-02T03:04:05.123456Z`.
    public var postgresText: String? { PostgresTimestamp.format(self) }
}

extension UUID: PostgresBindable {
    public var postgresText: String? { uuidString.lowercased() }
}

extension Array: PostgresBindable where Element: PostgresArrayElement {
    /// `[UInt8]` binds as bytea; `[String]`/`[Int64]`/`[Int]` as array literals.
    public var postgresText: String? { Element.postgresText(forArray: self) }
}

extension Optional: PostgresBindable where Wrapped: PostgresBindable {
    public var postgresText: String? { self?.postgresText }
}

/// Element types whose Swift arrays have a Postgres text form: `UInt8` (a `bytea`),
/// `String`, `Int64` and `Int` (one-dimensional array literals such as `{"a","b"}`).
public protocol PostgresArrayElement: Sendable {
    static func postgresText(forArray elements: [Self]) -> String
    static func decodeArray(postgresText text: String) -> [Self]?
}

extension UInt8: PostgresArrayElement {
    public static func postgresText(forArray elements: [UInt8]) -> String { "\\x" + ByteaHex.encode(elements) }
    public static func decodeArray(postgresText text: String) -> [UInt8]? { ByteaHex.decode(text) }
}

extension String: PostgresArrayElement {
    public static func postgresText(forArray elements: [String]) -> String {
        ArrayLiteral.quoted(elements)
    }

    public static func decodeArray(postgresText text: String) -> [String]? {
        guard let items = ArrayLiteral.parse(text) else { return nil }
        return items.contains(nil) ? nil : items.map { $0! }
    }
}

extension Int64: PostgresArrayElement {
    public static func postgresText(forArray elements: [Int64]) -> String { ArrayLiteral.format(elements.map(String.init)) }
    public static func decodeArray(postgresText text: String) -> [Int64]? {
        if let values = ArrayLiteral.integers(text) { return values }
        guard let items = ArrayLiteral.parse(text) else { return nil }
        var values: [Int64] = []
        for item in items {
            guard let item, let value = Int64(item) else { return nil }
            values.append(value)
        }
        return values
    }
}

extension Int: PostgresArrayElement {
    public static func postgresText(forArray elements: [Int]) -> String { ArrayLiteral.format(elements.map(String.init)) }
    public static func decodeArray(postgresText text: String) -> [Int]? {
        Int64.decodeArray(postgresText: text).map { $0.map { Int($0) } }
    }
}

extension Optional: PostgresArrayElement where Wrapped == Int {
    /// `[Int?]`: an integer array whose elements may be NULL (`{1,NULL,3}`).
    public static func postgresText(forArray elements: [Int?]) -> String {
        ArrayLiteral.format(elements.map { $0.map(String.init) ?? "NULL" })
    }

    public static func decodeArray(postgresText text: String) -> [Int?]? {
        if let values = ArrayLiteral.integersOrNull(text) { return values.map { $0.map { Int($0) } } }
        guard let items = ArrayLiteral.parse(text) else { return nil }
        var values: [Int?] = []
        for item in items {
            guard let item else { values.append(nil); continue }
            guard let value = Int(item) else { return nil }
            values.append(value)
        }
        return values
    }
}
