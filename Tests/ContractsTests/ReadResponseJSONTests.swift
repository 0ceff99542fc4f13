import Contracts
import Foundation
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
}
