/// The one rule of a reading event, as uploaded (`ReadingEventUploadItem`) and as carried on
/// `reading.events.v2` (`ReadingEventRecord`). Ingest checks an upload against it before it
/// accepts the event; the progress projector and the analytics aggregator check each record
/// against it before they project it, and dead-letter a record that breaks it. A record one
/// stage accepts, every stage accepts — whether ingest produced it just now, a replay or a
/// republish brought it back, or an older producer wrote it.
///
/// When the event was written (`clientTimestamp` within 10 minutes ahead and the retention
/// window behind the server's clock) is ingest's acceptance rule, not the record's: it is
/// measured against the clock at receipt, and a replay a year later carries the same record.
extension ReadingEventUploadItem {
    /// Active seconds one event may add: 0…3600 (an hour between two events at most).
    public static let activeSecondsDeltaRange = 0...3600
    /// UTC−12:00 … UTC+14:00, the offsets in use on Earth, in minutes.
    public static let timezoneOffsetRange = -720...840
    /// The longest `platform` and `appVersion`, in UTF-8 bytes.
    public static let maxLabelBytes = 64

    /// Checks every field against its bounds; the first broken rule is thrown.
    public func validate() throws(ContractViolation) {
        guard Identifier.isUUID(eventId) else {
            throw ContractViolation(code: .invalidEventID, field: "eventId", message: "eventId must be a UUID")
        }
        try Self.identifier(materialId, "materialId")
        try Self.identifier(clientSessionId, "clientSessionId")
        if let knowledgeBaseId { try Self.identifier(knowledgeBaseId, "knowledgeBaseId") }
        if eventType == .positionChanged, position == nil { throw Self.invalidPosition }
        if let position, !position.isValid { throw Self.invalidPosition }
        guard Self.activeSecondsDeltaRange.contains(activeSecondsDelta) else {
            throw ContractViolation(code: .invalidActiveSeconds, field: "activeSecondsDelta",
                                    message: "activeSecondsDelta must be an integer within 0…\(Self.activeSecondsDeltaRange.upperBound)")
        }
        guard Self.timezoneOffsetRange.contains(clientTimezoneOffsetMinutes) else {
            throw ContractViolation(code: .invalidTimezone, field: "clientTimezoneOffsetMinutes",
                                    message: "clientTimezoneOffsetMinutes must be an integer within −720…840")
        }
        guard sequence >= 0 else {
            throw ContractViolation(code: .invalidField, field: "sequence", message: "sequence must be a non-negative integer")
        }
        try Self.label(platform, "platform")
        try Self.label(appVersion, "appVersion")
    }

    public static let invalidPosition = ContractViolation(code: .invalidPosition, field: "position", message: """
        position must be a JSON object of at most \(ReadingPosition.maxBytes) bytes, nested at most \(ReadingPosition.maxDepth) \
        levels; of the keys this system reads, page ≥ 1 and ≤ totalPages (1…1000000), progress 0…1, \
        0 ≤ scrollOffset ≤ contentLength, anchor at most \(ReadingPosition.maxAnchorBytes) bytes; required for positionChanged
        """)

    static func identifier(_ text: String, _ name: String) throws(ContractViolation) {
        guard Identifier.isValid(text) else {
            throw ContractViolation(code: .invalidField, field: name, message: "\(name) must be \(Identifier.rule)")
        }
    }

    static func label(_ text: String, _ name: String) throws(ContractViolation) {
        guard !text.isEmpty, text.utf8.count <= maxLabelBytes else {
            throw ContractViolation(code: .invalidField, field: name,
                                    message: "\(name) must be a non-empty string of at most \(maxLabelBytes) bytes")
        }
    }
}

extension ReadingEventRecord {
    /// The schema versions this build reads.
    public static let readableSchemaVersions = 1...currentSchemaVersion

    /// The event's rule, plus the record's own fields: a schema version this build reads and
    /// the user id (a token's `sub`, `Identifier.isAcceptable`).
    public func validate() throws(ContractViolation) {
        guard Self.readableSchemaVersions.contains(schemaVersion) else {
            throw ContractViolation(code: .invalidField, field: "schemaVersion", message: "unsupported schemaVersion \(schemaVersion)")
        }
        guard Identifier.isAcceptable(userId) else {
            throw ContractViolation(code: .invalidField, field: "userId",
                                    message: "userId must be at most \(Identifier.maxUTF8Length) bytes without whitespace or control characters")
        }
        try event.validate()
    }
}
