import Contracts
import Foundation
import JSON

/// The per-event decisions of one batch, made in steps: validation, duplicates within
/// the batch, material rules, already-accepted ids, and finally the Kafka outcome.
/// Every step only narrows the set of candidates; results stay in request order.
public struct ReadingEventBatchPlan: Sendable {
    public enum Slot: Sendable {
        case decided(ReadingEventResult)
        /// Valid so far; `key` is the lower-cased event id used for dedup.
        case candidate(ReadingEventUploadItem, key: String)
    }

    public private(set) var slots: [Slot]

    public init(items: [JSONValue], validator: ReadingEventValidator, now: Date) {
        self.init(events: items.map(RawReadingEvent.init), validator: validator, now: now)
    }

    /// Validates every event and marks repeats of an earlier event's id as duplicates.
    public init(events: [RawReadingEvent], validator: ReadingEventValidator, now: Date) {
        var seen: Set<String> = []
        slots = events.map { raw in
            if let id = raw.rawEventID, Identifier.isUUID(id) {
                let key = AcceptedEventLedger.key(id)
                guard seen.insert(key).inserted else { return .decided(.duplicate(id)) }
            }
            switch validator.validate(raw, now: now) {
            case .success(let item):
                return .candidate(item, key: AcceptedEventLedger.key(item.eventId))
            case .failure(let rejection):
                return .decided(.rejected(raw.rawEventID, rejection.code,
                                          field: rejection.field, message: rejection.message))
            }
        }
    }

    public var candidates: [(index: Int, item: ReadingEventUploadItem, key: String)] {
        slots.enumerated().compactMap { index, slot in
            if case .candidate(let item, let key) = slot { return (index, item, key) }
            return nil
        }
    }

    public var candidateMaterialIDs: Set<String> { Set(candidates.map(\.item.materialId)) }

    /// Applies the catalog rules for `userID`.
    public mutating func applyMaterials(_ materials: [String: MaterialResponse], userID: String, now: Date) {
        for (index, item, _) in candidates {
            if let rejection = MaterialAccessRule.check(materials[item.materialId], userID: userID,
                                                        targetType: item.readingTargetType, now: now) {
                slots[index] = .decided(.rejected(item.eventId, rejection.code, field: rejection.field,
                                                  message: rejection.message))
            }
        }
    }

    /// Marks events whose id was accepted by an earlier request as duplicates.
    public mutating func applyAlreadyAccepted(_ keys: Set<String>) {
        for (index, item, key) in candidates where keys.contains(key) {
            slots[index] = .decided(.duplicate(item.eventId))
        }
    }

    /// Marks every remaining candidate accepted (after Kafka acknowledged all of them).
    public mutating func acceptCandidates() {
        for (index, item, _) in candidates { slots[index] = .decided(.accepted(item.eventId)) }
    }

    public var response: ReadingEventBatchResponse {
        ReadingEventBatchResponse(results: slots.map { slot in
            switch slot {
            case .decided(let result): result
            case .candidate(let item, _): .accepted(item.eventId)
            }
        })
    }
}
