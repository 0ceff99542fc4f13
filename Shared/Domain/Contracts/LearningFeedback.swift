import Foundation

/// `POST /feedback` body (seed `003_*` §九 `Feedback`, P1 反馈页): what a signed-in user thinks,
/// optionally about one lesson or session. Goes to `learning.sessions.v1` like the learner's
/// other writes; the analytics aggregator keeps it (`learning_feedback`).
public struct FeedbackRequest: Sendable, Hashable, Codable {
    /// The app's own id of this feedback: a resend with the same id is kept once (absent: one is minted).
    public var feedbackId: String?
    public var text: String
    public var lessonId: String?
    public var sessionId: String?
    public var appVersion: String?
    /// 1–5, when the app asks for one.
    public var rating: Int?

    public init(feedbackId: String? = nil, text: String, lessonId: String? = nil, sessionId: String? = nil, appVersion: String? = nil,
                rating: Int? = nil) {
        self.feedbackId = feedbackId
        self.text = text
        self.lessonId = lessonId
        self.sessionId = sessionId
        self.appVersion = appVersion
        self.rating = rating
    }

    public static let maxTextBytes = 8 * 1024

    public func validate() throws(LearningContractViolation) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, text.utf8.count <= Self.maxTextBytes else {
            throw .init("text", "text must hold something, at most \(Self.maxTextBytes) bytes")
        }
        for (name, value) in [("feedbackId", feedbackId), ("lessonId", lessonId), ("sessionId", sessionId), ("appVersion", appVersion)] {
            if let value, !Identifier.isValid(value) || value.utf8.count > 128 { throw .init(name, "\(name) must be 1…128 bytes without control characters") }
        }
        if let rating, !(1...5).contains(rating) { throw .init("rating", "rating must be 1…5") }
    }
}

/// `POST /waitlist` body (seed `003_*` §九 `WaitlistEntry`): the website's sign-up, no account.
public struct WaitlistRequest: Sendable, Hashable, Codable {
    public var email: String
    /// Where the sign-up came from (`website`, a campaign tag).
    public var source: String?

    public init(email: String, source: String? = nil) {
        self.email = email
        self.source = source
    }

    /// The address as it is kept and compared: trimmed, lower-cased.
    public var normalizedEmail: String { email.trimmingCharacters(in: .whitespaces).lowercased() }

    /// A plausible address (RFC 5321's lengths: 64-byte local part, 254 in all; one `@`; a
    /// domain of dot-separated labels of letters, digits and hyphens); `source` 1…64 bytes.
    public func validate() throws(LearningContractViolation) {
        let address = normalizedEmail
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        guard address.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 64,
              parts[0].allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "\"" && $0 != "," && $0 != ";" && $0 != "<" && $0 != ">" }),
              !parts[0].hasPrefix("."), !parts[0].hasSuffix("."), !parts[0].contains("..") else {
            throw .init("email", "email must be an address like name@example.com")
        }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ label in
            !label.isEmpty && label.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }), labels.last!.count >= 2 else {
            throw .init("email", "email must be an address like name@example.com")
        }
        if let source, !Identifier.isValid(source) || source.utf8.count > 64 {
            throw .init("source", "source must be 1…64 bytes without control characters")
        }
    }
}
