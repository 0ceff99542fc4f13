/// Writes JSON bytes exactly as Foundation's `JSONEncoder` with `[.sortedKeys,
/// .withoutEscapingSlashes]` would (compact, keys in the order the caller gives — sorted, as
/// `.sortedKeys` does; `/` unescaped; other escapes and number formats as Foundation writes
/// them), without the `Encodable` machinery. The contracts add their timestamps
/// (`timestamp(_:)`, in `Contracts`), and their tests pin every hand-written encoding against
/// `ContractCoding.encoder`.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    private var needsComma = false

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public mutating func beginObject() { separate(); bytes.append(UInt8(ascii: "{")); needsComma = false }
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma = true }
    public mutating func beginArray() { separate(); bytes.append(UInt8(ascii: "[")); needsComma = false }
    public mutating func endArray() { bytes.append(UInt8(ascii: "]")); needsComma = true }

    /// `"key":` — the next value call writes its value.
    public mutating func key(_ key: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// `"key":` for a key known only at run time (escaped like any string).
    public mutating func dynamicKey(_ key: String) {
        string(key)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    public mutating func string(_ value: String) {
        separate()
        JSONString.append(value, to: &bytes)
        needsComma = true
    }

    /// Any JSON value as `JSONValue`'s `Encodable` conformance writes it (integral numbers
    /// below 9e15 as integers, object keys sorted).
    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .number(let n):
            if n == n.rounded(), abs(n) < 9.0e15 { int(Int(n)) } else { double(n) }
        case .string(let text): string(text)
        case .array(let values):
            beginArray()
            for element in values { self.value(element) }
            endArray()
        case .object(let members):
            beginObject()
            for key in members.keys.sorted(by: JSONWriter.keyOrder) {
                dynamicKey(key)
                self.value(members[key]!)
            }
            endObject()
        }
    }

    /// The order `.sortedKeys` puts object keys in: by their UTF-8 bytes (not `String`'s `<`,
    /// which compares canonical equivalents alike: `"\u{212A}x"`, KELVIN SIGN, sorts as `"Kx"`
    /// there, after `"é"` in Foundation's output). ASCII keys sort the same either way.
    public static func keyOrder(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

    public mutating func int(_ value: Int) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }

    /// Shortest round-trip digits; integral values without `.0` (`1200`, `0.42`, `1e+20`).
    public mutating func double(_ value: Double) {
        separate()
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
        needsComma = true
    }

    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        needsComma = true
    }

    public mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
        needsComma = true
    }

    /// A value whose JSON text `write` appends to the bytes itself (a string in a format of the
    /// caller's, quotes included): the separator before it is written here.
    public mutating func rawValue(_ write: (inout [UInt8]) -> Void) {
        separate()
        write(&bytes)
        needsComma = true
    }

    /// Optional members are left out when nil, as synthesized `Encodable` does.
    public mutating func string(_ key: StaticString, _ value: String?) {
        guard let value else { return }
        self.key(key)
        string(value)
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }
}
