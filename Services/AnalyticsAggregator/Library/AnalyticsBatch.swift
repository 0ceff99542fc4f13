import Contracts
import Foundation

/// The aggregate changes of a set of newly recorded events, folded per key so that each
/// key is upserted once per transaction. Folding only sums, takes minima/maxima and ORs,
/// so the same events in any order (or split over any batches) give the same totals.
struct AnalyticsBatch: Sendable, Equatable {
    struct DayKey: Hashable, Comparable, Sendable {
        var user: String
        var day: LocalDay
        static func < (a: DayKey, b: DayKey) -> Bool { (a.user, a.day.number) < (b.user, b.day.number) }
    }

    struct DayItemKey: Hashable, Comparable, Sendable {
        var user: String
        var day: LocalDay
        var item: String
        static func < (a: DayItemKey, b: DayItemKey) -> Bool { (a.user, a.day.number, a.item) < (b.user, b.day.number, b.item) }
    }

    struct UserItemKey: Hashable, Comparable, Sendable {
        var user: String
        var item: String
        static func < (a: UserItemKey, b: UserItemKey) -> Bool { (a.user, a.item) < (b.user, b.item) }
    }

    struct DayTotals: Equatable, Sendable {
        var activeSeconds = 0
        var events = 0
    }

    /// Times are epoch milliseconds (the contract's precision).
    struct SessionTotals: Equatable, Sendable {
        var materialID: String
        var startedAt: Int64
        var lastEventAt: Int64
        var closedAt: Int64?
        var activeSeconds: Int
        var completed: Bool
        var events: Int
    }

    struct LatestOffset: Equatable, Sendable {
        var at: Int64
        var offsetMinutes: Int
    }

    var days: [DayKey: DayTotals] = [:]
    /// Material read on a day → completed that day.
    var dayMaterials: [DayItemKey: Bool] = [:]
    var daySessions: Set<DayItemKey> = []
    /// Material completed → first completion time.
    var completions: [UserItemKey: Int64] = [:]
    var sessions: [UserItemKey: SessionTotals] = [:]
    var users: [String: LatestOffset] = [:]

    init() {}

    init(_ events: some Sequence<ReadingEventRecord>) {
        for event in events { add(event) }
    }

    /// Epoch milliseconds; never traps (a decoded record's instants lie within `ContractCoding.timestampRange`).
    static func milliseconds(_ date: Date) -> Int64 {
        let millis = (date.timeIntervalSince1970 * 1000).rounded()
        return millis.isFinite && abs(millis) < 9e18 ? Int64(millis) : 0
    }

    mutating func add(_ event: ReadingEventRecord) {
        let day = LocalDay(instant: event.clientTimestamp, offsetMinutes: event.clientTimezoneOffsetMinutes)
        let at = Self.milliseconds(event.clientTimestamp)
        let completes = event.eventType == .markedAsRead
        let seconds = max(0, event.activeSecondsDelta)

        days[DayKey(user: event.userId, day: day), default: DayTotals()].activeSeconds += seconds
        days[DayKey(user: event.userId, day: day), default: DayTotals()].events += 1
        let materialKey = DayItemKey(user: event.userId, day: day, item: event.materialId)
        dayMaterials[materialKey] = (dayMaterials[materialKey] ?? false) || completes
        daySessions.insert(DayItemKey(user: event.userId, day: day, item: event.clientSessionId))
        if completes {
            let key = UserItemKey(user: event.userId, item: event.materialId)
            completions[key] = min(completions[key] ?? at, at)
        }

        let sessionKey = UserItemKey(user: event.userId, item: event.clientSessionId)
        var session = sessions[sessionKey] ?? SessionTotals(
            materialID: event.materialId, startedAt: at, lastEventAt: at, closedAt: nil,
            activeSeconds: 0, completed: false, events: 0)
        if at < session.startedAt || (at == session.startedAt && event.materialId < session.materialID) {
            session.materialID = event.materialId
        }
        session.startedAt = min(session.startedAt, at)
        session.lastEventAt = max(session.lastEventAt, at)
        if event.eventType == .closed { session.closedAt = max(session.closedAt ?? at, at) }
        session.activeSeconds += seconds
        session.completed = session.completed || completes
        session.events += 1
        sessions[sessionKey] = session

        let latest = LatestOffset(at: at, offsetMinutes: event.clientTimezoneOffsetMinutes)
        if let current = users[event.userId], (current.at, current.offsetMinutes) >= (latest.at, latest.offsetMinutes) {
            return
        }
        users[event.userId] = latest
    }

    var isEmpty: Bool { days.isEmpty }
}
