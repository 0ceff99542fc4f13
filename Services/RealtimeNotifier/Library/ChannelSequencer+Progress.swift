import Contracts
import Foundation
import JSON
import Projection

extension ChannelSequencer {
    /// `user:{userId}` gets `progress_updated` with the `reading.progress.v1` record as its payload.
    ///
    /// The record is read once: by `ProgressRecordJSON` when it is plainly the projector's, else by
    /// `JSONDecoder` (which accepts and refuses as it always has); the payload is built from the
    /// decoded change (`progressPayload`), the value the record's JSON text decodes to.
    public static func input(progress value: [UInt8]) throws -> SequencerInput {
        let change = try ProgressRecordJSON.change(value) ?? ContractCoding.decode(ReadingProgressChanged.self, from: value)
        guard let channel = ChannelName.user(change.userId) else {
            throw InvalidRecord(description: "userId must be a non-empty identifier of at most \(Identifier.maxUTF8Length) bytes")
        }
        return SequencerInput(drafts: [.init(channel: channel, event: "progress_updated",
                                             payload: progressPayload(change), origin: nil)], room: nil)
    }

    /// The change as a `JSONValue`: equal, for every change, to what its `ContractCoding` text
    /// decodes to (`json(change)`, the encode-and-decode it replaces) — the members its
    /// `Encodable` conformance writes (nil optionals left out), numbers as `Double`s, dates as
    /// `ContractCoding.formatTimestamp` writes them, the position's recognised keys beside its
    /// other members.
    static func progressPayload(_ change: ReadingProgressChanged) -> JSONValue {
        var fields: [String: JSONValue] = [
            "schemaVersion": .number(Double(change.schemaVersion)),
            "userId": .string(change.userId),
            "materialId": .string(change.materialId),
            "status": .string(change.status.rawValue),
            "progressPercent": .number(change.progressPercent),
            "totalActiveSeconds": .number(Double(change.totalActiveSeconds)),
        ]
        if let position = change.lastPosition {
            var members = position.extra
            if let page = position.page { members["page"] = .number(Double(page)) }
            if let totalPages = position.totalPages { members["totalPages"] = .number(Double(totalPages)) }
            if let progress = position.progress { members["progress"] = .number(progress) }
            if let scrollOffset = position.scrollOffset { members["scrollOffset"] = .number(scrollOffset) }
            if let contentLength = position.contentLength { members["contentLength"] = .number(contentLength) }
            if let anchor = position.anchor { members["anchor"] = .string(anchor) }
            fields["lastPosition"] = .object(members)
        }
        if let lastReadAt = change.lastReadAt { fields["lastReadAt"] = .string(ContractCoding.formatTimestamp(lastReadAt)) }
        if let lastSessionId = change.lastSessionId { fields["lastSessionId"] = .string(lastSessionId) }
        return .object(fields)
    }
}
