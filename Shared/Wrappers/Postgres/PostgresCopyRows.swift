import Foundation

/// Rows for `COPY … FROM STDIN` (text format), written field by field straight into the
/// COPY stream's bytes: no boxed values and no intermediate strings per field.
///
///     var rows = PostgresCopyRows()
///     for e in events { rows.append(e.id); rows.append(e.count); rows.append(e.at); rows.endRow() }
///     try await connection.copy(into: "t", columns: ["id", "count", "at"], rows: rows)
///
/// Values have the same text forms as their `PostgresBindable` binds; strings are escaped for
/// COPY (backslash, tab, newline, carriage return).
public struct PostgresCopyRows: Sendable {
    /// The COPY text written so far.
    public private(set) var bytes: [UInt8] = []
    /// Complete rows.
    public private(set) var count = 0
    /// Fields per row, when every row so far has the same number (nil before the first row
    /// or once two rows differ).
    public private(set) var fieldsPerRow: Int?
    private var fieldsInRow = 0

    public init(reservingBytes capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    private mutating func separate() {
        if fieldsInRow > 0 { bytes.append(UInt8(ascii: "\t")) }
        fieldsInRow += 1
    }

    public mutating func appendNull() {
        separate()
        bytes.append(UInt8(ascii: "\\"))
        bytes.append(UInt8(ascii: "N"))
    }

    public mutating func append(_ value: String) {
        separate()
        var value = value
        value.withUTF8 { utf8 in
            guard utf8.contains(where: Self.needsEscape) else {
                bytes.append(contentsOf: utf8)
                return
            }
            for byte in utf8 {
                switch byte {
                case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "\t"): bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "t"))
                case UInt8(ascii: "\n"): bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"): bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "r"))
                default: bytes.append(byte)
                }
            }
        }
    }

    public mutating func append(_ value: String?) {
        if let value { append(value) } else { appendNull() }
    }

    public mutating func append(_ value: Int) { append(Int64(value)) }

    public mutating func append(_ value: Int32) { append(Int64(value)) }

    public mutating func append(_ value: Int64) {
        separate()
        Self.appendDecimal(value, minimumDigits: 1, to: &bytes)
    }

    /// UTC with microseconds, as `Date`'s bind text.
    public mutating func append(_ value: Date) {
        separate()
        PostgresTimestamp.append(value, to: &bytes)
    }

    /// Any other bindable value, through its `postgresText`.
    public mutating func append(bindable value: any PostgresBindable) {
        if let text = value.postgresText { append(text) } else { appendNull() }
    }

    /// Ends the current row.
    public mutating func endRow() {
        bytes.append(UInt8(ascii: "\n"))
        if count == 0 {
            fieldsPerRow = fieldsInRow
        } else if fieldsPerRow != fieldsInRow {
            fieldsPerRow = nil  // stays nil: nil never equals a count
        }
        count += 1
        fieldsInRow = 0
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
    }

    /// Appends the decimal digits of `value`, zero-padded to `minimumDigits`.
    static func appendDecimal(_ value: Int64, minimumDigits: Int, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var count = 0
            repeat {
                digits[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for _ in count..<max(count, minimumDigits) { bytes.append(UInt8(ascii: "0")) }
            while count > 0 {
                count -= 1
                bytes.append(digits[count])
            }
        }
    }
}
