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
