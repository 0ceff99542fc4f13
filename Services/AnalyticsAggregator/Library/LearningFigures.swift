import Contracts

/// One local day's active time.
public struct DailyActivity: Hashable, Sendable {
    public var day: LocalDay
    public var activeSeconds: Int

    public init(day: LocalDay, activeSeconds: Int) {
        self.day = day
        self.activeSeconds = activeSeconds
    }
}

/// The figures of the analysis tab, computed from per-day totals. Pure: the read model
/// supplies the rows, these functions shape them.
public enum LearningFigures {
    /// Current streak (qualifying days ending today, or yesterday when today does not
    /// qualify yet) and the longest run of consecutive qualifying days: the definition the
    /// aggregator's kept runs (`StreakRuns`) answer for the summary.
    public static func streaks(_ days: [DailyActivity], today: LocalDay, thresholdSeconds: Int) -> (current: Int, longest: Int) {
        let qualifying = Set(days.filter { $0.activeSeconds >= max(1, thresholdSeconds) }.map(\.day.number))
        var longest = 0
        for number in qualifying where !qualifying.contains(number - 1) {
            var length = 1
            while qualifying.contains(number + length) { length += 1 }
            longest = max(longest, length)
        }
        var end = today.number
        if !qualifying.contains(end) { end -= 1 }
        var current = 0
        while qualifying.contains(end - current) { current += 1 }
        return (current, longest)
    }

    /// `GET /learning/summary`, from the days of the current week (others are ignored), the
    /// streaks and the last active day.
    public static func summary(_ days: [DailyActivity], today: LocalDay, streaks: (current: Int, longest: Int),
                               lastActiveDay: LocalDay?, materialsReadToday: Int, materialsCompleted: Int) -> LearningSummaryResponse {
        let weekStart = today.startOfWeek
        var todaySeconds = 0, weekSeconds = 0
        for day in days {
            if day.day == today { todaySeconds += day.activeSeconds }
            if day.day >= weekStart && day.day <= today { weekSeconds += day.activeSeconds }
        }
        return LearningSummaryResponse(
            todayActiveSeconds: todaySeconds, weekActiveSeconds: weekSeconds, materialsReadToday: materialsReadToday,
            materialsCompleted: materialsCompleted, currentStreakDays: streaks.current, longestStreakDays: streaks.longest,
            lastActiveDay: lastActiveDay?.description, today: today.description)
    }

    /// The `count` local days ending today, oldest first.
    public static func window(endingAt today: LocalDay, count: Int) -> ClosedRange<LocalDay> {
        (today - (max(1, count) - 1))...today
    }

    /// Seconds per day of the window, zero-filled, oldest first.
    static func filled(_ days: [DailyActivity], window: ClosedRange<LocalDay>) -> [(LocalDay, Int)] {
        var seconds = [Int](repeating: 0, count: window.upperBound - window.lowerBound + 1)
        for day in days where window.contains(day.day) { seconds[day.day - window.lowerBound] += day.activeSeconds }
        return seconds.enumerated().map { (window.lowerBound + $0.offset, $0.element) }
    }

    /// `GET /learning/trend?days=N`.
    public static func trend(_ days: [DailyActivity], today: LocalDay, count: Int) -> LearningTrendResponse {
        LearningTrendResponse(points: filled(days, window: window(endingAt: today, count: count)).map {
            LearningTrendResponse.Point(day: $0.0.description, activeSeconds: $0.1)
        })
    }

    /// `GET /activity/heatmap?days=N`.
    public static func heatmap(_ days: [DailyActivity], today: LocalDay, count: Int) -> ActivityHeatmapResponse {
        ActivityHeatmapResponse(days: filled(days, window: window(endingAt: today, count: count)).map {
            ActivityHeatmapResponse.Day(day: $0.0.description, activeSeconds: $0.1,
                                        level: ActivityHeatmapResponse.level(forSeconds: $0.1))
        })
    }
}
