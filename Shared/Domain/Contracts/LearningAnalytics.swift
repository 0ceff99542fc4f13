import Foundation

/// `GET /learning/summary`. Days are the user's local days as `YYYY-MM-DD`; weeks start Monday.
public struct LearningSummaryResponse: Sendable, Hashable, Codable {
    public var todayActiveSeconds: Int
    public var weekActiveSeconds: Int
    public var materialsReadToday: Int
    public var materialsCompleted: Int
    public var currentStreakDays: Int
    public var longestStreakDays: Int
    public var lastActiveDay: String?
    public var today: String

    public init(todayActiveSeconds: Int, weekActiveSeconds: Int, materialsReadToday: Int, materialsCompleted: Int,
                currentStreakDays: Int, longestStreakDays: Int, lastActiveDay: String?, today: String) {
        self.todayActiveSeconds = todayActiveSeconds
        self.weekActiveSeconds = weekActiveSeconds
        self.materialsReadToday = materialsReadToday
        self.materialsCompleted = materialsCompleted
        self.currentStreakDays = currentStreakDays
        self.longestStreakDays = longestStreakDays
        self.lastActiveDay = lastActiveDay
        self.today = today
    }
}

/// `GET /learning/trend?days=N`: one point per local day ending today, oldest first, zero-filled.
public struct LearningTrendResponse: Sendable, Hashable, Codable {
    public struct Point: Sendable, Hashable, Codable {
        public var day: String
        public var activeSeconds: Int
        public init(day: String, activeSeconds: Int) {
            self.day = day
            self.activeSeconds = activeSeconds
        }
    }

    public var points: [Point]
    public init(points: [Point]) { self.points = points }
}

/// `GET /activity/heatmap?days=N`: per-day seconds and a 0–4 level
/// (0 none, 1 < 15 min, 2 < 30 min, 3 < 60 min, 4 ≥ 60 min).
public struct ActivityHeatmapResponse: Sendable, Hashable, Codable {
    public struct Day: Sendable, Hashable, Codable {
        public var day: String
        public var activeSeconds: Int
        public var level: Int
        public init(day: String, activeSeconds: Int, level: Int) {
            self.day = day
            self.activeSeconds = activeSeconds
            self.level = level
        }
    }

    public var days: [Day]
    public init(days: [Day]) { self.days = days }

    public static func level(forSeconds seconds: Int) -> Int {
        switch seconds {
        case ..<1: 0
        case ..<(15 * 60): 1
        case ..<(30 * 60): 2
        case ..<(60 * 60): 3
        default: 4
        }
    }
}

/// `GET /learning/history?limit=&cursor=`: reading sessions, newest first.
public struct LearningHistoryResponse: Sendable, Hashable, Codable {
    public struct Session: Sendable, Hashable, Codable {
        public var clientSessionId: String
        public var materialId: String
        public var startedAt: Date
        public var endedAt: Date
        public var activeSeconds: Int
        public var completed: Bool
        public init(clientSessionId: String, materialId: String, startedAt: Date, endedAt: Date, activeSeconds: Int, completed: Bool) {
            self.clientSessionId = clientSessionId
            self.materialId = materialId
            self.startedAt = startedAt
            self.endedAt = endedAt
            self.activeSeconds = activeSeconds
            self.completed = completed
        }
    }

    public var sessions: [Session]
    /// Opaque; absent on the last page.
    public var nextCursor: String?
    public init(sessions: [Session], nextCursor: String?) {
        self.sessions = sessions
        self.nextCursor = nextCursor
    }
}
