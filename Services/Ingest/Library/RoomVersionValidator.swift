import Contracts
import Foundation
import HTTPRouting

/// Checks a `POST /rooms/versions` body before anything is stored or produced.
///
/// - `INVALID_FIELD`: `roomId`/`versionId` not UUIDs, empty or over-long title, storage
///   keys that are empty, absolute, contain `..`, `\` or control characters, sizes ≤ 0,
///   a `sha256` that is not 64 hex digits.
/// - `FILE_TOO_LARGE` (413): `source.usdzBytes` (or `roomplanJsonBytes`) over the limit.
/// - `INVALID_TAGS`: more than 8 tags, or a tag that is empty, over 32 characters, or has
///   characters other than letters, digits, spaces, `-` and `_` (any script: `众包` is fine).
/// - `REDACTION_INVALID`: a region outside 0…1, zero-sized or not inside the texture;
///   an empty `textureRef` or `method` (or one with control characters); more than 1,000 redactions.
public struct RoomVersionValidator: Sendable {
    public static let maxTags = 8
    public static let maxTagLength = 32
    public static let maxTitleLength = 120
    public static let maxKeyBytes = 1024
    public static let maxRedactions = 1000

    public var maxUSDZBytes: Int64

    public init(maxUSDZBytes: Int64) { self.maxUSDZBytes = maxUSDZBytes }

    public func validate(_ request: RoomVersionCompleteRequest) throws(HTTPError) {
        for (name, value) in [("roomId", request.roomId), ("versionId", request.versionId)] where UUID(uuidString: value) == nil {
            throw Self.error(.badRequest, .invalidField, "\(name) must be a UUID")
        }
        let title = request.title.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !title.isEmpty, request.title.count <= Self.maxTitleLength,
              !Identifier.containsControlCharacter(request.title) else {
            throw Self.error(.badRequest, .invalidField, "title must be 1…\(Self.maxTitleLength) characters")
        }
        try validateTags(request.tags)
        try validateSource(request.source)
        try validateRedactions(request.redactions)
    }

    public func validateTags(_ tags: [String]) throws(HTTPError) {
        guard tags.count <= Self.maxTags else {
            throw Self.error(.badRequest, .invalidTags, "at most \(Self.maxTags) tags")
        }
        for tag in tags where !Self.isLegalTag(tag) {
            throw Self.error(.badRequest, .invalidTags, "a tag is 1…\(Self.maxTagLength) letters, digits, spaces, - or _")
        }
    }

    public static func isLegalTag(_ tag: String) -> Bool {
        guard !tag.trimmingCharacters(in: .whitespaces).isEmpty, tag.count <= maxTagLength else { return false }
        return tag.unicodeScalars.allSatisfy { scalar in
            switch scalar.properties.generalCategory {
            case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
                 .decimalNumber, .letterNumber, .otherNumber, .nonspacingMark, .spacingMark, .enclosingMark:
                return true
            default:
                return scalar == " " || scalar == "-" || scalar == "_"
            }
        }
    }

    func validateSource(_ source: RoomSource) throws(HTTPError) {
        for (name, key) in [("source.usdzKey", source.usdzKey), ("source.roomplanJsonKey", source.roomplanJsonKey)]
        where !Self.isSafeStorageKey(key) {
            throw Self.error(.badRequest, .invalidField, "\(name) must be a relative storage key")
        }
        for (name, bytes) in [("source.usdzBytes", source.usdzBytes), ("source.roomplanJsonBytes", source.roomplanJsonBytes)]
        where bytes <= 0 {
            throw Self.error(.badRequest, .invalidField, "\(name) must be positive")
        }
        if source.usdzBytes > maxUSDZBytes || source.roomplanJsonBytes > maxUSDZBytes {
            throw Self.error(.payloadTooLarge, .fileTooLarge, "the scan is larger than \(maxUSDZBytes) bytes")
        }
        if let sha = source.sha256, sha.utf8.count != 64 || !sha.utf8.allSatisfy({ $0.isHexDigit }) {
            throw Self.error(.badRequest, .invalidField, "source.sha256 must be 64 hexadecimal digits")
        }
    }

    static func isSafeStorageKey(_ key: String) -> Bool {
        guard !key.isEmpty, key.utf8.count <= maxKeyBytes, !key.hasPrefix("/"), !key.contains("\\") else { return false }
        if Identifier.containsControlCharacter(key) { return false }
        return !key.split(separator: "/", omittingEmptySubsequences: false).contains { $0 == ".." || $0 == "." || $0.isEmpty }
    }

    func validateRedactions(_ redactions: [Redaction]) throws(HTTPError) {
        guard redactions.count <= Self.maxRedactions else {
            throw Self.error(.badRequest, .redactionInvalid, "at most \(Self.maxRedactions) redactions")
        }
        for (index, redaction) in redactions.enumerated() {
            guard redaction.region.isValid, !redaction.textureRef.isEmpty, redaction.textureRef.utf8.count <= Self.maxKeyBytes,
                  !redaction.method.isEmpty, redaction.method.utf8.count <= 64,
                  !Identifier.containsControlCharacter(redaction.textureRef), !Identifier.containsControlCharacter(redaction.method) else {
                throw Self.error(.badRequest, .redactionInvalid, "redactions[\(index)] is not a valid normalised redaction")
            }
        }
    }

    static func error(_ status: HTTPStatus, _ code: ErrorCode, _ message: String) -> HTTPError {
        HTTPError(status, code: code.rawValue, message: message)
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
