/// The rule for the identifiers the apps and the catalog send — material, session,
/// knowledge-base and owner ids: 1…`maxBytes` bytes of UTF-8 without a control character.
/// Ingest rejects anything else (`INVALID_FIELD`), so no read model holds such an id and a read
/// that names one is answered the same way.
public enum Identifier {
    public static let maxBytes = 256
    /// The rule in words, for error messages.
    public static let rule = "1…\(maxBytes) bytes without control characters"

    public static func isValid(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maxBytes && !containsControlCharacter(text)
    }

    /// Whether `text` has a character of general category Cc (U+0000–U+001F, U+007F–U+009F),
    /// read straight from its UTF-8 (U+0080–U+009F are `C2 80`…`C2 9F`).
    public static func containsControlCharacter(_ text: String) -> Bool {
        var previous: UInt8 = 0
        for byte in text.utf8 {
            if byte < 0x20 || byte == 0x7F || (previous == 0xC2 && byte >= 0x80 && byte <= 0x9F) { return true }
            previous = byte
        }
        return false
    }
}

extension Identifier {
    /// The longest user id (a token's `sub`), room id, channel or event name, in UTF-8 bytes.
    /// Every channel name is `room:` or `user:` plus one of these, so the channel name limit
    /// follows from this one.
    public static let maxUTF8Length = 250

    /// A user id, room id or name that reaches the pipeline: non-empty, at most
    /// `maxUTF8Length` bytes (or `limit`), no whitespace and no control characters.
    public static func isAcceptable(_ value: String, maxUTF8Length limit: Int = maxUTF8Length) -> Bool {
        guard !value.isEmpty, value.utf8.count <= limit else { return false }
        // ASCII, the usual case, straight from the bytes: its whitespace and control scalars
        // are U+0000–U+0020 and U+007F, and it has no format, private-use or unassigned ones.
        var ascii = true
        for byte in value.utf8 {
            if byte >= 0x80 { ascii = false; break }
            if byte <= 0x20 || byte == 0x7F { return false }
        }
        if ascii { return true }
        return value.unicodeScalars.allSatisfy { scalar in
            !scalar.properties.isWhitespace && !scalar.properties.generalCategory.isControlLike
        }
    }

    /// `8-4-4-4-12` hexadecimal digits, either case — what `UUID(uuidString:)` accepts.
    public static func isUUID(_ text: String) -> Bool {
        var index = 0
        for byte in text.utf8 {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                guard (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "f"))
                else { return false }
            }
            index += 1
        }
        return index == 36
    }
}

extension Unicode.GeneralCategory {
    /// Control, format, surrogate, private-use and unassigned scalars.
    fileprivate var isControlLike: Bool {
        switch self {
        case .control, .format, .surrogate, .privateUse, .unassigned: true
        default: false
        }
    }
}
