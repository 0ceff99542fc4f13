import Foundation

/// Low-level scanning over `.usda` text: whitespace and comments, identifiers, numbers,
/// strings, asset paths and prim paths. Errors carry the line number.
struct USDACursor {
    /// The layer's bytes, shared with the package (not copied); reads past the end give NUL,
    /// so look-ahead never leaves the buffer.
    private let text: Window
    private(set) var position: Int
    let name: String

    struct Window {
        let bytes: ArraySlice<UInt8>
        subscript(index: Int) -> UInt8 { index < bytes.endIndex ? bytes[index] : 0 }
        subscript(range: Range<Int>) -> ArraySlice<UInt8> { bytes[range.clamped(to: bytes.indices)] }
        /// One past the virtual NUL sentinel.
        var count: Int { bytes.endIndex + 1 }
    }

    init(_ bytes: ArraySlice<UInt8>, name: String, at offset: Int? = nil) {
        self.text = Window(bytes: bytes)
        self.position = offset ?? bytes.startIndex
        self.name = name
    }

    var atEnd: Bool { position >= text.count - 1 }
    var peek: UInt8 { text[position] }
    func peek(_ ahead: Int) -> UInt8 { text[position + ahead] }

    var line: Int { 1 + text[text.bytes.startIndex..<min(position, text.count)].reduce(0) { $0 + ($1 == 10 ? 1 : 0) } }

    func error(_ message: String) -> USDError {
        USDError(.syntax, message, context: "\(name) line \(line)")
    }

    mutating func advance(_ count: Int = 1) { position = min(position + count, text.count - 1) }

    /// Skips spaces, newlines and `#` comments (but not the `#usda` header, handled first).
    mutating func skipSpace() {
        while true {
            let byte = text[position]
            if byte == 32 || byte == 9 || byte == 10 || byte == 13 {
                position += 1
            } else if byte == 35 { // '#'
                while text[position] != 10 && text[position] != 0 { position += 1 }
            } else if byte == 47, text[position + 1] == 47 { // '//'
                while text[position] != 10 && text[position] != 0 { position += 1 }
            } else if byte == 47, text[position + 1] == 42 { // '/* */'
                position += 2
                while text[position] != 0, !(text[position] == 42 && text[position + 1] == 47) { position += 1 }
                if text[position] != 0 { position += 2 }
            } else {
                return
            }
        }
    }

    /// Skips whitespace and, if the next byte is `byte`, consumes it.
    mutating func consume(_ byte: UInt8) -> Bool {
        skipSpace()
        if text[position] == byte {
            position += 1
            return true
        }
        return false
    }

    mutating func expect(_ byte: UInt8) throws {
        guard consume(byte) else {
            throw error("expected '\(Character(UnicodeScalar(byte)))', found \(describeNext())")
        }
    }

    func describeNext() -> String {
        if atEnd { return "end of file" }
        let end = min(position + 16, text.count - 1)
        return "'" + String(decoding: text[position..<end], as: UTF8.self).split(separator: "\n").first.map(String.init)! + "'"
    }

    static func isIdentifierStart(_ byte: UInt8) -> Bool {
        (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == 95
    }

    static func isIdentifierByte(_ byte: UInt8) -> Bool {
        isIdentifierStart(byte) || (byte >= 48 && byte <= 57)
    }

    /// An identifier, namespaced (`a:b:c`) and with `.`-suffixes (`x.timeSamples`) kept.
    mutating func identifier() -> String? {
        skipSpace()
        guard USDACursor.isIdentifierStart(text[position]) else { return nil }
        let start = position
        while true {
            let byte = text[position]
            if USDACursor.isIdentifierByte(byte) {
                position += 1
            } else if (byte == 58 || byte == 46), USDACursor.isIdentifierStart(text[position + 1]) {
                position += 1
            } else {
                break
            }
        }
        return String(decoding: text[start..<position], as: UTF8.self)
    }

    mutating func expectIdentifier() throws -> String {
        guard let word = identifier() else { throw error("expected an identifier, found \(describeNext())") }
        return word
    }

    /// Looks at the next identifier without consuming it.
    mutating func peekIdentifier() -> String? {
        let saved = position
        defer { position = saved }
        return identifier()
    }

    var startsNumber: Bool {
        let byte = text[position]
        return (byte >= 48 && byte <= 57) || byte == 45 || byte == 43 || byte == 46
    }

    /// A number (`-1.5e3`, `inf`, `-inf`, `nan`).
    mutating func number() throws -> Double {
        skipSpace()
        if text[position] == 45, text[position + 1] == 105 { // -inf
            position += 1
            guard identifier() == "inf" else { throw error("bad number") }
            return -.infinity
        }
        var end = position
        while true {
            let byte = text[end]
            if (byte >= 48 && byte <= 57) || byte == 45 || byte == 43 || byte == 46 || byte == 101 || byte == 69 {
                end += 1
            } else {
                break
            }
        }
        guard end > position else {
            if let word = identifier() {
                switch word {
                case "inf": return .infinity
                case "nan": return .nan
                case "true": return 1
                case "false": return 0
                default: throw error("expected a number, found '\(word)'")
                }
            }
            throw error("expected a number, found \(describeNext())")
        }
        let start = position
        let length = end - position
        // strtod needs a terminated copy: the window is not NUL-terminated.
        let value: Double? = withUnsafeTemporaryAllocation(of: CChar.self, capacity: length + 1) { buffer -> Double? in
            for i in 0..<length { buffer[i] = CChar(bitPattern: text[start + i]) }
            buffer[length] = 0
            let base = UnsafePointer(buffer.baseAddress!)
            var stop: UnsafeMutablePointer<CChar>? = nil
            let parsed = strtod(base, &stop)
            guard let stop, UnsafePointer(stop) - base == length else { return nil }
            return parsed
        }
        guard let value else { throw error("malformed number") }
        position = end
        return value
    }

    /// A quoted string: `"…"`, `'…'`, or triple-quoted, with backslash escapes.
    mutating func string() throws -> String? {
        skipSpace()
        let quote = text[position]
        guard quote == 34 || quote == 39 else { return nil }
        let triple = text[position + 1] == quote && text[position + 2] == quote
        position += triple ? 3 : 1
        var bytes: [UInt8] = []
        while true {
            let byte = text[position]
            if byte == 0 { throw error("unterminated string") }
            if byte == quote {
                if !triple { position += 1; break }
                if text[position + 1] == quote && text[position + 2] == quote { position += 3; break }
            }
            if byte == 92 { // backslash
                position += 1
                let escaped = text[position]
                switch escaped {
                case 110: bytes.append(10)
                case 116: bytes.append(9)
                case 114: bytes.append(13)
                case 0: throw error("unterminated string")
                default: bytes.append(escaped)
                }
                position += 1
                continue
            }
            if byte == 10, !triple { throw error("newline in string") }
            bytes.append(byte)
            position += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// An asset path `@…@` or `@@@…@@@`.
    mutating func asset() throws -> String? {
        skipSpace()
        guard text[position] == 64 else { return nil }
        let triple = text[position + 1] == 64 && text[position + 2] == 64
        position += triple ? 3 : 1
        let start = position
        while true {
            let byte = text[position]
            if byte == 0 || (byte == 10 && !triple) { throw error("unterminated asset path") }
            if byte == 64 {
                if !triple { break }
                if text[position + 1] == 64 && text[position + 2] == 64 { break }
            }
            position += 1
        }
        let value = String(decoding: text[start..<position], as: UTF8.self)
        position += triple ? 3 : 1
        return value
    }

    /// A path `<…>`.
    mutating func path() throws -> String? {
        skipSpace()
        guard text[position] == 60 else { return nil }
        position += 1
        let start = position
        while text[position] != 62 {
            if text[position] == 0 || text[position] == 10 { throw error("unterminated path") }
            position += 1
        }
        let value = String(decoding: text[start..<position], as: UTF8.self)
        position += 1
        return value
    }

    /// Skips one balanced value or block (used for unsupported constructs).
    mutating func skipBalanced(depth: Int = 0) throws {
        guard depth < 64 else { throw error("blocks nested too deeply") }
        skipSpace()
        let open = text[position]
        let close: UInt8
        switch open {
        case 40: close = 41
        case 91: close = 93
        case 123: close = 125
        default:
            if try string() != nil || asset() != nil || path() != nil { return }
            if startsNumber { _ = try number(); return }
            if identifier() != nil { return }
            throw error("unexpected \(describeNext())")
        }
        position += 1
        while true {
            skipSpace()
            if text[position] == close { position += 1; return }
            if text[position] == 0 { throw error("unbalanced '\(Character(UnicodeScalar(open)))'") }
            switch text[position] {
            case 40, 91, 123: try skipBalanced(depth: depth + 1)
            case 34, 39: _ = try string()
            case 64: _ = try asset()
            case 60: _ = try path()
            default: position += 1
            }
        }
    }
}
