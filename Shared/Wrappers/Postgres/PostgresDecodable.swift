import Foundation

/// A Swift type a column value (text result format) can be decoded into.
///
/// Conformers implement `decode(postgresText:)`, returning `nil` when the text is not a
/// valid value. SQL NULL decodes only into `Optional`.
public protocol PostgresDecodable: Sendable {
    static func decode(postgresText text: String) -> Self?
    /// The value SQL NULL decodes to, or `nil` when NULL is an error for this type.
    static var postgresNull: Self? { get }
}

extension PostgresDecodable {
    public static var postgresNull: Self? { nil }
}

extension String: PostgresDecodable {
    public static func decode(postgresText text: String) -> String? { text }
}

extension Int: PostgresDecodable {
    public static func decode(postgresText text: String) -> Int? { Int(text) }
}

extension Int32: PostgresDecodable {
    public static func decode(postgresText text: String) -> Int32? { Int32(text) }
}

extension Int64: PostgresDecodable {
    public static func decode(postgresText text: String) -> Int64? { Int64(text) }
}

extension Double: PostgresDecodable {
    /// Decodes float4/float8 and numeric text (`NaN`, `Infinity` included).
    public static func decode(postgresText text: String) -> Double? { Double(text) }
}

extension Bool: PostgresDecodable {
    public static func decode(postgresText text: String) -> Bool? {
        switch text {
        case "t", "true": true
        case "f", "false": false
        default: nil
        }
    }
}

extension Date: PostgresDecodable {
    /// Decodes `timestamptz`, `timestamp` (taken as UTC) and `date` text output.
    public static func decode(postgresText text: String) -> Date? { PostgresTimestamp.parse(text) }
}

extension UUID: PostgresDecodable {
    public static func decode(postgresText text: String) -> UUID? { UUID(uuidString: text) }
}

extension Array: PostgresDecodable where Element: PostgresArrayElement {
    /// `[UInt8]` decodes `bytea` hex output; `[String]`/`[Int64]`/`[Int]` one-dimensional arrays.
    public static func decode(postgresText text: String) -> [Element]? { Element.decodeArray(postgresText: text) }
}

// Inlinable, as `PostgresRow.decode` is: a caller decoding `Int?` per row otherwise looked up
// `Optional<Int>`'s metadata at run time on every row (2 % of a heatmap request's CPU).
extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    @inlinable
    public static func decode(postgresText text: String) -> Wrapped?? {
        Wrapped.decode(postgresText: text).map { .some($0) }
    }

    @inlinable
    public static var postgresNull: Wrapped?? { .some(.none) }
}
