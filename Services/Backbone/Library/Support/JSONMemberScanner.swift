/// Finds the raw bytes of one member of a top-level JSON object without decoding it, so a
/// nested value can be passed on byte for byte. Expects text that is already known to be
/// valid JSON (the caller parsed it); member names are matched literally.
enum JSONMemberScanner {
    static func rawValue(of name: String, in text: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        let wanted = Array("\"\(name)\"".utf8)
        var index = skipWhitespace(text, from: text.startIndex)
        guard index < text.endIndex, text[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        while true {
            index = skipWhitespace(text, from: index)
            guard index < text.endIndex, text[index] == UInt8(ascii: "\"") else { return nil }
            let nameEnd = skipString(text, from: index)
            let memberName = text[index..<nameEnd]
            index = skipWhitespace(text, from: nameEnd)
            guard index < text.endIndex, text[index] == UInt8(ascii: ":") else { return nil }
            let valueStart = skipWhitespace(text, from: index + 1)
            let valueEnd = skipValue(text, from: valueStart)
            if memberName.elementsEqual(wanted) { return text[valueStart..<valueEnd] }
            index = skipWhitespace(text, from: valueEnd)
            guard index < text.endIndex, text[index] == UInt8(ascii: ",") else { return nil }
            index += 1
        }
    }

    private static func skipWhitespace(_ text: ArraySlice<UInt8>, from start: Int) -> Int {
        var index = start
        while index < text.endIndex, [0x20, 0x09, 0x0A, 0x0D].contains(text[index]) { index += 1 }
        return index
    }

    /// `start` is at the opening quote; returns the index after the closing quote.
    private static func skipString(_ text: ArraySlice<UInt8>, from start: Int) -> Int {
        var index = start + 1
        while index < text.endIndex {
            switch text[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return text.endIndex
    }

    /// Returns the index just after the value starting at `start`.
    private static func skipValue(_ text: ArraySlice<UInt8>, from start: Int) -> Int {
        guard start < text.endIndex else { return start }
        switch text[start] {
        case UInt8(ascii: "\""):
            return skipString(text, from: start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var index = start
            while index < text.endIndex {
                switch text[index] {
                case UInt8(ascii: "\""):
                    index = skipString(text, from: index)
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return index + 1 }
                default:
                    break
                }
                index += 1
            }
            return text.endIndex
        default:
            var index = start
            while index < text.endIndex, ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D].contains(text[index]) {
                index += 1
            }
            return index
        }
    }
}
