/// JSON number text (as the JSON reader validated it) to Swift numbers, with Foundation's rules: an
/// integer field takes any number that is exactly an `Int` (`3`, `3.0`, `1e2`); a double
/// field any finite number.
public enum JSONNumber {
    public static func integer(_ text: UnsafeRawBufferPointer) -> Int? {
        let plain = !text.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
        if plain {
            // Accumulated negatively, so Int.min fits too; overflow is not an Int.
            var value = 0
            for byte in text where byte != UInt8(ascii: "-") {
                let (shifted, o1) = value.multipliedReportingOverflow(by: 10)
                let (next, o2) = shifted.subtractingReportingOverflow(Int(byte &- UInt8(ascii: "0")))
                if o1 || o2 { return nil }
                value = next
            }
            if text.first == UInt8(ascii: "-") { return value }
            return value == .min ? nil : -value
        }
        guard let value = double(text) else { return nil }
        return Int(exactly: value)
    }

    public static func double(_ text: UnsafeRawBufferPointer) -> Double? {
        guard let value = Double(Substring(decoding: text, as: UTF8.self)), value.isFinite else { return nil }
        return value
    }
}
