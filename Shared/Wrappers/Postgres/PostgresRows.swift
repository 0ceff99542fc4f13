import Foundation
internal import CLibPQ

/// Owns one `PGresult`, cleared in `deinit`. Column names, the command tag and the affected
/// rows are read from the result when asked for, not when it arrives: most statements are
/// decoded by position and never ask (building a name table for each result was 4 % of a point
/// read's CPU).
// @unchecked Sendable: a PGresult is immutable once returned by libpq and its accessors
// only read it, so concurrent reads from any thread are safe; the pointer never escapes.
@usableFromInline
final class QueryResult: @unchecked Sendable {
    private let pointer: OpaquePointer
    @usableFromInline let columnCount: Int
    let rowCount: Int

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
        self.columnCount = Int(PQnfields(pointer))
        self.rowCount = Int(PQntuples(pointer))
    }

    deinit { PQclear(pointer) }

    /// Column names in result order.
    var columns: [String] { (0..<columnCount).map(name(of:)) }

    @usableFromInline
    func name(of column: Int) -> String {
        PQfname(pointer, Int32(column)).map { String(cString: $0) } ?? "?column?"
    }

    /// The position of the first column named exactly `name` (no case folding, unlike `PQfnumber`).
    @usableFromInline
    func position(of name: String) -> Int? {
        var name = name
        return name.withUTF8 { wanted in
            for column in 0..<columnCount {
                guard let candidate = PQfname(pointer, Int32(column)), strlen(candidate) == wanted.count else { continue }
                if wanted.isEmpty || memcmp(candidate, wanted.baseAddress!, wanted.count) == 0 { return column }
            }
            return nil
        }
    }

    var commandTag: String { String(cString: PQcmdStatus(pointer)) }
    var affectedRows: Int { Int(String(cString: PQcmdTuples(pointer))) ?? 0 }

    @usableFromInline
    func value(row: Int, column: Int) -> String? {
        if PQgetisnull(pointer, Int32(row), Int32(column)) != 0 { return nil }
        return String(cString: PQgetvalue(pointer, Int32(row), Int32(column)))
    }
}

/// The rows a statement returned, in order. Values are decoded lazily from text.
public struct PostgresRows: Sequence, Sendable {
    let result: QueryResult

    /// Column names in result order.
    public var columns: [String] { result.columns }
    public var count: Int { result.rowCount }
    public var isEmpty: Bool { result.rowCount == 0 }
    /// Rows inserted/updated/deleted/copied (`PQcmdTuples`), 0 for statements without a count.
    public var affectedRows: Int { result.affectedRows }
    /// The command tag, e.g. `INSERT 0 1`, `COMMIT`.
    public var commandTag: String { result.commandTag }

    public var first: PostgresRow? { isEmpty ? nil : self[0] }

    public subscript(index: Int) -> PostgresRow {
        precondition(index >= 0 && index < count, "row index out of range")
        return PostgresRow(result: result, index: index)
    }

    public func makeIterator() -> Iterator { Iterator(rows: self) }

    public struct Iterator: IteratorProtocol {
        let rows: PostgresRows
        var position = 0
        public mutating func next() -> PostgresRow? {
            guard position < rows.count else { return nil }
            defer { position += 1 }
            return rows[position]
        }
    }
}

/// One result row. `decode` converts a column's text into a `PostgresDecodable` type.
///
/// The decoding methods are inlinable, so that each caller's module specializes them for the
/// types it decodes: unspecialized, every call looked up the type's generic metadata and
/// conformance at run time (17 % of a heatmap request's CPU, 365 rows of `Int?` and `Int`).
public struct PostgresRow: Sendable {
    @usableFromInline let result: QueryResult
    /// The row's position in its result.
    public let index: Int

    public var columns: [String] { result.columns }

    /// Decodes the column named `column` (the first one, if the name repeats).
    @inlinable
    public func decode<T: PostgresDecodable>(_ type: T.Type, _ column: String) throws(PostgresError) -> T {
        guard let position = result.position(of: column) else {
            throw PostgresError.decoding(column: column, type: T.self, reason: "no such column in the result")
        }
        return try decode(type, at: position, name: column)
    }

    /// Decodes the column at zero-based `column` position.
    @inlinable
    public func decode<T: PostgresDecodable>(_ type: T.Type, _ column: Int) throws(PostgresError) -> T {
        guard column >= 0 && column < result.columnCount else {
            throw PostgresError.decoding(column: "#\(column)", type: T.self, reason: "column index out of range")
        }
        return try decode(type, at: column, name: nil)
    }

    /// The raw text of a column, `nil` for NULL.
    public func text(_ column: String) -> String? {
        result.position(of: column).flatMap { result.value(row: index, column: $0) }
    }

    @inlinable
    func decode<T: PostgresDecodable>(_ type: T.Type, at column: Int, name: String?) throws(PostgresError) -> T {
        guard let text = result.value(row: index, column: column) else {
            guard let null = T.postgresNull else {
                throw PostgresError.decoding(column: name ?? result.name(of: column), type: T.self, reason: "value is NULL")
            }
            return null
        }
        guard let value = T.decode(postgresText: text) else {
            throw PostgresError.decoding(column: name ?? result.name(of: column), type: T.self, reason: "malformed value")
        }
        return value
    }
}
