import Contracts
import Foundation

/// What one batch changes for one (user, material): folded in memory so the batch costs one
/// upsert per pair, merged in SQL with the same order-independent rules.
struct ProgressDelta: Sendable {
    /// Orders events: client timestamp, then sequence, then event id (a deterministic tie-break).
    struct OrderKey: Sendable, Comparable {
        var timestamp: Date
        var sequence: Int
        var eventID: String

        static func < (a: OrderKey, b: OrderKey) -> Bool {
            (a.timestamp, a.sequence, a.eventID) < (b.timestamp, b.sequence, b.eventID)
        }
    }

    struct Positioned: Sendable {
        var key: OrderKey
        var position: ReadingPosition
    }

    struct Latest: Sendable {
        var key: OrderKey
        var sessionID: String
        var targetType: ReadingTargetType
        var knowledgeBaseID: String?
    }

    var userID: String
    var materialID: String
    var activeSeconds = 0
    var firstRead: Date
    var lastRead: Date
    var completedAt: Date?
    var position: Positioned?
    var latest: Latest

    init(_ e: ReadingEventRecord) {
        userID = e.userId
        materialID = e.materialId
        firstRead = e.clientTimestamp
        lastRead = e.clientTimestamp
        latest = Latest(key: Self.key(e), sessionID: e.clientSessionId, targetType: e.readingTargetType, knowledgeBaseID: e.knowledgeBaseId)
        add(e, first: true)
    }

    static func key(_ e: ReadingEventRecord) -> OrderKey {
        OrderKey(timestamp: e.clientTimestamp, sequence: e.sequence, eventID: e.eventId)
    }

    mutating func add(_ e: ReadingEventRecord, first: Bool = false) {
        let key = Self.key(e)
        if !first {
            firstRead = min(firstRead, e.clientTimestamp)
            lastRead = max(lastRead, e.clientTimestamp)
            if latest.key < key {
                latest = Latest(key: key, sessionID: e.clientSessionId, targetType: e.readingTargetType, knowledgeBaseID: e.knowledgeBaseId)
            }
        }
        activeSeconds += e.activeSecondsDelta
        if e.eventType == .markedAsRead { completedAt = min(completedAt ?? e.clientTimestamp, e.clientTimestamp) }
        if let p = e.position, position.map({ $0.key < key }) ?? true { position = Positioned(key: key, position: p) }
    }

    /// One delta per (user, material), in first-seen order.
    static func fold(_ events: [ReadingEventRecord]) -> [ProgressDelta] {
        var order: [String] = []
        var deltas: [String: ProgressDelta] = [:]
        for e in events {
            let id = e.userId + "\u{0}" + e.materialId
            if deltas[id] == nil {
                deltas[id] = ProgressDelta(e)
                order.append(id)
            } else {
                deltas[id]!.add(e)
            }
        }
        return order.map { deltas[$0]! }
    }
}
