import Contracts
import Foundation
import JSON
import Testing

/// The read endpoints' hand-written bodies must be byte for byte what `ContractCoding.encoder` writes.
@Suite("Read responses written with JSONWriter")
struct ReadResponseJSONTests {
    static let tricky = "it's \"quoted\" \\ back/slash\ttab\nnewline 中文 🎉 \u{01}"
    static let date = Date(timeIntervalSince1970: 1_767_225_845.123)

    func same<T: Encodable>(_ value: T, _ bytes: [UInt8]) throws {
        #expect(String(decoding: bytes, as: UTF8.self) == String(decoding: try ContractCoding.encode(value), as: UTF8.self))
    }

    @Test("reading progress, full, not started and with every optional left out")
    func readingProgress() throws {
        let full = ReadingProgressResponse(
            materialId: Self.tricky, status: .inProgress,
            lastPosition: ReadingPosition(page: 3, totalPages: 40, progress: 0.42, scrollOffset: 1200, contentLength: 1e20, anchor: Self.tricky),
            progressPercent: 42.5, totalActiveSeconds: 600, firstReadAt: Self.date, lastReadAt: Self.date.addingTimeInterval(0.5),
            completedAt: Self.date.addingTimeInterval(-86_400), lastSessionId: "s-1", readingTargetType: .knowledgeSource,
            knowledgeBaseId: "kb/1")
        try same(full, full.json)
        try same(ReadingProgressResponse.notStarted("m-1"), ReadingProgressResponse.notStarted("m-1").json)
        let integral = ReadingProgressResponse(materialId: "m", status: .completed, lastPosition: .fraction(1), progressPercent: 100)
        try same(integral, integral.json)
    }

    @Test("continue learning, a material and none")
    func continueLearning() throws {
        let material = ContinueLearningResponse(type: .material, materialId: "m-9", readingTargetType: .temporaryFile,
                                                knowledgeBaseId: nil, lastPosition: .scroll(10.25, of: 300), progressPercent: 3.3333333333333335,
                                                lastReadAt: Self.date)
        try same(material, material.json)
        try same(ContinueLearningResponse.none, ContinueLearningResponse.none.json)
    }

    @Test("trend and heatmap, empty and filled")
    func series() throws {
        let trend = LearningTrendResponse(points: [.init(day: "2026-01-01", activeSeconds: 0), .init(day: "2026-01-02", activeSeconds: 86_400)])
        try same(trend, trend.json)
        try same(LearningTrendResponse(points: []), LearningTrendResponse(points: []).json)
        let heatmap = ActivityHeatmapResponse(days: (0..<366).map { .init(day: "d\($0)", activeSeconds: $0 * 17, level: $0 % 5) })
        try same(heatmap, heatmap.json)
        try same(ActivityHeatmapResponse(days: []), ActivityHeatmapResponse(days: []).json)
    }

    @Test("summary, active and never active")
    func summary() throws {
        let active = LearningSummaryResponse(todayActiveSeconds: 600, weekActiveSeconds: 3_600, materialsReadToday: 2, materialsCompleted: 17,
                                             currentStreakDays: 3, longestStreakDays: 40, lastActiveDay: "2026-12-01", today: "2026-12-02")
        try same(active, active.json)
        let never = LearningSummaryResponse(todayActiveSeconds: 0, weekActiveSeconds: 0, materialsReadToday: 0, materialsCompleted: 0,
                                            currentStreakDays: 0, longestStreakDays: 0, lastActiveDay: nil, today: "2026-12-02")
        try same(never, never.json)
    }

    @Test("history, a page with a cursor, the last page and no sessions")
    func history() throws {
        let sessions = (0..<20).map { index in
            LearningHistoryResponse.Session(clientSessionId: index == 0 ? Self.tricky : "s-\(index)", materialId: "m/\(index)",
                                            startedAt: Self.date.addingTimeInterval(Double(-index) * 3_600.25),
                                            endedAt: Self.date.addingTimeInterval(Double(-index) * 3_600.25 + 1_200.5),
                                            activeSeconds: index * 60, completed: index % 3 == 0)
        }
        let page = LearningHistoryResponse(sessions: sessions, nextCursor: "eyJ0IjoxfQ")
        try same(page, page.json)
        let last = LearningHistoryResponse(sessions: Array(sessions.prefix(2)), nextCursor: nil)
        try same(last, last.json)
        try same(LearningHistoryResponse(sessions: [], nextCursor: nil), LearningHistoryResponse(sessions: [], nextCursor: nil).json)
    }
}
