@testable import AnalyticsAggregator
import Contracts
import Testing

@Suite("Learning figures")
struct LearningFiguresTests {
    let today = LocalDay(2026, 11, 30)

    func days(_ pairs: [(Int, Int)]) -> [DailyActivity] {
        pairs.map { DailyActivity(day: today - $0.0, activeSeconds: $0.1) }
    }

    /// The summary as the route builds it, with the streaks and last active day computed from
    /// the same days (their definitions).
    func summary(_ days: [DailyActivity], today: LocalDay, thresholdSeconds: Int, materialsReadToday: Int,
                 materialsCompleted: Int) -> LearningSummaryResponse {
        LearningFigures.summary(days, today: today, streaks: LearningFigures.streaks(days, today: today, thresholdSeconds: thresholdSeconds),
                                lastActiveDay: LearningFigures.lastActiveDay(days), materialsReadToday: materialsReadToday,
                                materialsCompleted: materialsCompleted)
    }

    @Test("a streak runs through today and counts every consecutive active day")
    func streakThroughToday() {
        let s = LearningFigures.streaks(days([(0, 60), (1, 300), (2, 61)]), today: today, thresholdSeconds: 60)
        #expect(s.current == 3)
        #expect(s.longest == 3)
    }

    @Test("today not yet active keeps the streak that ended yesterday")
    func todayNotYetActive() {
        let s = LearningFigures.streaks(days([(1, 100), (2, 100), (3, 100)]), today: today, thresholdSeconds: 60)
        #expect(s.current == 3)
        let stale = LearningFigures.streaks(days([(2, 100), (3, 100)]), today: today, thresholdSeconds: 60)
        #expect(stale.current == 0)
        #expect(stale.longest == 2)
    }

    @Test("a gap of one day breaks the streak")
    func gap() {
        let s = LearningFigures.streaks(days([(0, 100), (1, 100), (3, 100), (4, 100), (5, 100), (6, 100)]),
                                        today: today, thresholdSeconds: 60)
        #expect(s.current == 2)
        #expect(s.longest == 4)
    }

    @Test("a day below the threshold does not count and breaks the streak")
    func belowThreshold() {
        let s = LearningFigures.streaks(days([(0, 100), (1, 59), (2, 100)]), today: today, thresholdSeconds: 60)
        #expect(s.current == 1)
        #expect(s.longest == 1)
        let lower = LearningFigures.streaks(days([(0, 100), (1, 59), (2, 100)]), today: today, thresholdSeconds: 30)
        #expect(lower.current == 3)
    }

    @Test("the summary sums today and the week since Monday, and names the last active day")
    func summary() {
        // today is a Monday: last week's Sunday does not count towards this week
        let s = summary(days([(0, 120), (1, 500), (3, 0)]), today: today, thresholdSeconds: 60,
                                        materialsReadToday: 2, materialsCompleted: 5)
        #expect(s.todayActiveSeconds == 120)
        #expect(s.weekActiveSeconds == 120)
        #expect(s.currentStreakDays == 2)
        #expect(s.lastActiveDay == "2026-11-30")
        #expect(s.today == "2026-11-30")
        #expect(s.materialsReadToday == 2 && s.materialsCompleted == 5)
        // Sunday 6 December: Monday 30 November and Wednesday 2 December count, Sunday 29 November does not
        let sunday = summary(days([(0, 120), (-2, 500), (1, 7)]), today: today + 6, thresholdSeconds: 60,
                                             materialsReadToday: 0, materialsCompleted: 0)
        #expect(sunday.weekActiveSeconds == 620)
        #expect(sunday.todayActiveSeconds == 0)
        #expect(sunday.lastActiveDay == "2026-12-02")
        let empty = summary([], today: today, thresholdSeconds: 60, materialsReadToday: 0, materialsCompleted: 0)
        #expect(empty.lastActiveDay == nil)
    }

    @Test("the trend has one zero-filled point per day ending today, oldest first")
    func trend() {
        let t = LearningFigures.trend(days([(0, 10), (3, 30), (9, 99)]), today: today, count: 7)
        #expect(t.points.map(\.day) == ["2026-11-24", "2026-11-25", "2026-11-26", "2026-11-27", "2026-11-28", "2026-11-29", "2026-11-30"])
        #expect(t.points.map(\.activeSeconds) == [0, 0, 0, 30, 0, 0, 10])
        #expect(LearningFigures.trend([], today: today, count: 1).points == [.init(day: "2026-11-30", activeSeconds: 0)])
    }

    @Test("the heatmap covers every day of the window with its intensity level")
    func heatmap() {
        let h = LearningFigures.heatmap(days([(0, 3600), (1, 3599), (2, 1799), (3, 899), (4, 1), (366, 50)]),
                                        today: today, count: 366)
        #expect(h.days.count == 366)
        #expect(h.days.first?.day == "2025-11-30")
        #expect(h.days.suffix(6).map(\.level) == [0, 1, 1, 2, 3, 4])
        #expect(h.days.dropLast(5).allSatisfy { $0.activeSeconds == 0 && $0.level == 0 })
    }
}
