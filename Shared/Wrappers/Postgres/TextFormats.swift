/// `bytea` hex form: `\x0a0b…`.
enum ByteaHex {
    private static let digits = Array("0123456789abcdef".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"),
              utf8.count % 2 == 0 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity((utf8.count - 2) / 2)
        var index = 2
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// One-dimensional Postgres array literals (`{a,"b c",NULL}`).
enum ArrayLiteral {
    /// `{"a","b\"c"}`: every element double-quoted, `"` and `\` escaped, built byte-wise.
    static func quoted(_ elements: [String]) -> String {
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        bytes.reserveCapacity(2 + elements.reduce(0) { $0 + $1.utf8.count + 3 })
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "\""))
            for byte in element.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
                bytes.append(byte)
            }
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    static func format(_ items: [String]) -> String { "{" + items.joined(separator: ",") + "}" }

    /// A literal of plain decimal integers (`{1,-2,30}`), read byte-wise without a `String` per
    /// element; `nil` for anything else (quotes, NULLs, overflow), which `parse` then reads.
    static func integers(_ text: String) -> [Int64]? {
        var values: [Int64] = []
        return scanIntegers(text, allowingNull: false, reserve: { values.reserveCapacity($0) }, append: { values.append($0 ?? 0) })
            ? values : nil
    }

    /// `integers` for a literal whose elements may also be `NULL` (`{1,NULL,30}`), each `nil`.
    static func integersOrNull(_ text: String) -> [Int64?]? {
        var values: [Int64?] = []
        return scanIntegers(text, allowingNull: true, reserve: { values.reserveCapacity($0) }, append: { values.append($0) })
            ? values : nil
    }

    /// Reads the elements of an integer literal in order (`NULL`, when allowed, as `nil`);
    /// whether the whole literal was one.
    @inline(__always)
    private static func scanIntegers(_ text: String, allowingNull: Bool, reserve: (Int) -> Void,
                                     append: (Int64?) -> Void) -> Bool {
        var text = text
        return text.withUTF8 { bytes -> Bool in
            guard bytes.count >= 2, bytes[0] == UInt8(ascii: "{"), bytes[bytes.count - 1] == UInt8(ascii: "}") else { return false }
            if bytes.count == 2 { return true }
            reserve(bytes.count / 2)
            let last = bytes.count - 1
            var index = 1
            while true {
                if allowingNull, index + 4 <= last, bytes[index] == UInt8(ascii: "N"), bytes[index + 1] == UInt8(ascii: "U"),
                   bytes[index + 2] == UInt8(ascii: "L"), bytes[index + 3] == UInt8(ascii: "L") {
                    append(nil)
                    index += 4
                } else {
                    let negative = bytes[index] == UInt8(ascii: "-")
                    if negative { index += 1 }
                    var value: Int64 = 0, digits = 0
                    while index < last, case let digit = bytes[index] &- UInt8(ascii: "0"), digit < 10 {
                        let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
                        let (sum, overflow2) = times.addingReportingOverflow(Int64(digit))
                        if overflow1 || overflow2 { return false }
                        value = sum
                        digits += 1
                        index += 1
                    }
                    guard digits > 0 else { return false }
                    append(negative ? -value : value)
                }
                if index == last { return true }
                guard bytes[index] == UInt8(ascii: ",") else { return false }
                index += 1
            }
        }
    }

    /// Parses a one-dimensional literal; `nil` elements are SQL NULLs.
    static func parse(_ text: String) -> [String?]? {
        var scalars = text.unicodeScalars[...]
        guard scalars.popFirst() == "{", scalars.popLast() == "}" else { return nil }
        var items: [String?] = []
        if scalars.isEmpty { return items }
        while true {
            var item = ""
            var quoted = false
            if scalars.first == "\"" {
                quoted = true
                scalars.removeFirst()
                while let scalar = scalars.popFirst(), scalar != "\"" {
                    if scalar == "\\" {
                        guard let escaped = scalars.popFirst() else { return nil }
                        item.unicodeScalars.append(escaped)
                    } else {
                        item.unicodeScalars.append(scalar)
                    }
                }
            } else {
                while let scalar = scalars.first, scalar != "," {
                    if scalar == "{" || scalar == "\"" { return nil }
                    item.unicodeScalars.append(scalar)
                    scalars.removeFirst()
                }
            }
            items.append(!quoted && item == "NULL" ? nil : item)
            guard let separator = scalars.popFirst() else { return items }
            guard separator == "," else { return nil }
        }
    }
}

/// COPY FROM STDIN text-format escaping.
enum CopyText {
    /// Appends one field: `\N` for NULL, otherwise the value with `\`, tab, LF and CR escaped.
    static func appendField(_ value: String?, to buffer: inout [UInt8]) {
        guard let value else {
            buffer.append(UInt8(ascii: "\\"))
            buffer.append(UInt8(ascii: "N"))
            return
        }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\t"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case UInt8(ascii: "\n"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            default: buffer.append(byte)
            }
        }
    }

    static func appendRow(_ row: [any PostgresBindable], to buffer: inout [UInt8]) {
        for (index, value) in row.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: "\t")) }
            appendField(value.postgresText, to: &buffer)
        }
        buffer.append(UInt8(ascii: "\n"))
    }
}
