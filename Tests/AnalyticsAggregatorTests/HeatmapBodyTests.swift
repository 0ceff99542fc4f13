import AnalyticsAggregator
import Contracts
import BackboneTestSupport
import Foundation
import Testing

@Suite("Heatmap body")
struct HeatmapBodyTests {
    @Test("the heatmap body written straight from the days is byte for byte the contract's encoding")
    func sameBytes() throws {
        var random = SplitMix64(state: 20261206)
        let todays = [LocalDay(2026, 12, 6), LocalDay(2024, 2, 29), LocalDay(1970, 1, 1), LocalDay(1969, 12, 31),
                      LocalDay(0, 1, 3), LocalDay(10_000, 1, 1), LocalDay(-1, 12, 31),
                      LocalDay(2000, 3, 1), LocalDay(2100, 3, 1), LocalDay(1900, 3, 1), LocalDay(9999, 12, 31), LocalDay(10_000, 12, 30)]
        for today in todays {
            for count in [1, 2, 7, 365, 366] {
                var days: [DailyActivity] = []
                for back in 0..<400 where Int.random(in: 0..<3, using: &random) == 0 {
                    let seconds = [0, 1, 899, 900, 1799, 1800, 3599, 3600, 86_400, 9_999_999_999][Int.random(in: 0..<10, using: &random)]
                    days.append(DailyActivity(day: today - back + Int.random(in: -1...1, using: &random), activeSeconds: seconds))
                }
                let response = LearningFigures.heatmap(days, today: today, count: count)
                let body = HeatmapBody.json(days, today: today, count: count)
                #expect(body == response.json, "\(today), \(count) days")
                #expect(body == (try ContractCoding.encode(response)), "\(today), \(count) days")
            }
        }
    }
}
