import AnalyticsAggregator
import Contracts
import Foundation

/// Builds reading events for tests: times are given as local wall-clock times of a user
/// with a fixed UTC offset, the way the app reports them.
struct EventFactory {
    var user: String
    var offsetMinutes: Int
    var counter = 0

    init(user: String = "user-\(UUID().uuidString.prefix(8))", offsetMinutes: Int = 0) {
        self.user = user
        self.offsetMinutes = offsetMinutes
    }

    /// The instant of local wall-clock `y-m-d h:min:s` at this user's offset.
    func instant(_ y: Int, _ m: Int, _ d: Int, _ h: Int = 12, _ min: Int = 0, _ s: Int = 0) -> Date {
        let localSeconds = LocalDay(year: y, month: m, day: d).number * 86_400 + h * 3600 + min * 60 + s
        return Date(timeIntervalSince1970: TimeInterval(localSeconds - offsetMinutes * 60))
    }

    mutating func event(_ type: ReadingEventType = .heartbeat, at date: Date, seconds: Int = 30,
                        session: String = "s1", material: String = "m1", eventID: String? = nil) -> ReadingEventRecord {
        counter += 1
        let item = ReadingEventUploadItem(
            eventId: eventID ?? UUID().uuidString.lowercased(), clientSessionId: session, readingTargetType: .knowledgeSource,
            materialId: material, eventType: type, position: .fraction(0.5), activeSecondsDelta: seconds,
            clientTimestamp: date, clientTimezoneOffsetMinutes: offsetMinutes, sequence: counter,
            platform: "ios", appVersion: "1.0")
        return ReadingEventRecord(userId: user, receivedAt: date.addingTimeInterval(1), item: item)
    }
}

extension LocalDay {
    init(_ y: Int, _ m: Int, _ d: Int) { self.init(year: y, month: m, day: d) }
}

extension LearningFigures {
    /// The latest day with any active time: the definition the summary's last active day is
    /// checked against (the read model finds it in SQL).
    static func lastActiveDay(_ days: [DailyActivity]) -> LocalDay? {
        days.lazy.filter { $0.activeSeconds > 0 }.map(\.day).max()
    }
}
