/// What an identifier that reaches the pipeline may look like: a user id (a token's `sub`),
/// a room id. Every channel name is `room:` or `user:` plus one of these, so the channel name
/// limit follows from this one.
public enum Identifier {
    /// The longest identifier in UTF-8 bytes.
    public static let maxUTF8Length = 250

    /// Non-empty, at most `maxUTF8Length` bytes (or `limit`), no whitespace and no control characters.
    public static func isAcceptable(_ value: String, maxUTF8Length limit: Int = maxUTF8Length) -> Bool {
        guard !value.isEmpty, value.utf8.count <= limit else { return false }
        return value.unicodeScalars.allSatisfy { scalar in
            !scalar.properties.isWhitespace && !scalar.properties.generalCategory.isControlLike
        }
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
