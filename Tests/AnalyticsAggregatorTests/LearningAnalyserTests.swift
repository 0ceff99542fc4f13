@testable import AnalyticsAggregator
import Contracts
import Foundation
import Testing

/// The built-in analyser on a small labelled set: for one Chinese and one English lesson,
/// answers written to cover all, some and none of the lesson's points. The labels are the
/// coverage the answer was written for; the verdicts must rise with it.
@Suite("Built-in learning analyser")
struct LearningAnalyserTests {
    static let chinese = Lesson(
        id: "zh-spaced", version: 1, knowledgeBaseId: "kb", title: "间隔重复", body: "…", objectives: [],
        keyConcepts: ["遗忘曲线", "间隔重复", "复习间隔"],
        recallQuestions: [RecallQuestion(id: "q1", question: "间隔重复怎样安排复习？",
                                         expectedPoints: ["在快要忘记时复习", "成功回忆后间隔变长", "回忆失败就缩短间隔"])])

    static let english = Lesson(
        id: "en-recall", version: 1, knowledgeBaseId: "kb", title: "Active recall", body: "…", objectives: [],
        keyConcepts: ["active recall", "testing effect", "retrieval practice"],
        recallQuestions: [RecallQuestion(id: "q1", question: "Why does recalling beat rereading?",
                                         expectedPoints: ["retrieval strengthens memory", "rereading only feels familiar",
                                                          "gaps show what to review"])])

    enum Label: Int, Comparable {
        case none = 0, some = 1, all = 2
        static func < (a: Label, b: Label) -> Bool { a.rawValue < b.rawValue }
    }

    static let set: [(lesson: Lesson, label: Label, answer: String)] = [
        (chinese, .all, "根据遗忘曲线，新内容最初忘得最快。间隔重复就是在快要忘记时复习；每次成功回忆后间隔变长，复习间隔越来越大；如果回忆失败就缩短间隔，从头开始。"),
        (chinese, .all, "首先，间隔重复利用遗忘曲线：在快要忘记时复习效果最好。其次，成功回忆后间隔变长。最后，回忆失败就缩短间隔，复习间隔重新变短。"),
        (chinese, .some, "间隔重复就是隔一段时间复习一次，在快要忘记时复习，这样记得更牢。"),
        (chinese, .some, "遗忘曲线说明我们会很快忘记，所以要按间隔重复来复习，不要一次看完。"),
        (chinese, .none, "我觉得今天的内容很有意思，读起来很轻松，希望明天继续学习。"),
        (chinese, .none, "多读几遍课本，把重点抄下来，考试前再看一遍就可以了。"),
        (english, .all, "Active recall means closing the book and retrieving what you read. Retrieval strengthens memory, which is the testing effect. Rereading only feels familiar, because familiarity is not recall. Finally, the gaps show what to review next: retrieval practice finds them."),
        (english, .all, "First, retrieval practice (active recall) strengthens memory through the testing effect. Second, rereading only feels familiar. Therefore the gaps you hit show what to review."),
        (english, .some, "Active recall is testing yourself instead of reading again, and retrieval strengthens memory over time."),
        (english, .some, "Rereading only feels familiar, so I should try active recall more often when I study."),
        (english, .none, "I liked this lesson a lot and I will read it again tomorrow morning before class."),
        (english, .none, "Highlighting the text with many colours makes the page look nice and organised."),
    ]

    @Test("verdicts on the labelled set rise with coverage, in Chinese and in English: all > some > none, and the score never falls as coverage grows")
    func monotoneInCoverage() {
        let analyser = BuiltinLearningAnalyser()
        for lesson in [Self.chinese, Self.english] {
            let results = Self.set.filter { $0.lesson.id == lesson.id }.map { item in
                (item.label, analyser.examine(lesson: lesson, questionId: "q1", answer: item.answer))
            }
            for (label, result) in results {
                switch label {
                case .all: #expect(result.analysis.masteryScore >= 4, "\(lesson.id) all: \(result.findings)")
                case .some: #expect((2...3).contains(result.analysis.masteryScore), "\(lesson.id) some: \(result.findings)")
                case .none: #expect(result.analysis.masteryScore == 1, "\(lesson.id) none: \(result.findings)")
                }
            }
            // Monotone: a higher label never gets a lower score or coverage than a lower label.
            for (a, ra) in results {
                for (b, rb) in results where a < b {
                    #expect(ra.analysis.masteryScore < rb.analysis.masteryScore, "\(lesson.id): \(a) vs \(b)")
                    #expect(ra.findings.coverage < rb.findings.coverage)
                }
            }
        }
    }

    @Test("every verdict follows the seed's schema: score 0–5 with its level word, text present, review wanted below 4")
    func seedSchema() throws {
        let analyser = BuiltinLearningAnalyser()
        for item in Self.set {
            let analysis = analyser.analyse(lesson: item.lesson, questionId: nil, answer: item.answer)
            try analysis.validate()
            #expect(analysis.understandingLevel == LearningAnalysis.levels[analysis.masteryScore])
            #expect(analysis.reviewNeeded == (analysis.masteryScore < 4))
            #expect(!analysis.nextAction.isEmpty && !analysis.summary.isEmpty)
            let json = String(decoding: try ContractCoding.encode(analysis), as: UTF8.self)
            for key in ["masteryScore", "understandingLevel", "summary", "strengths", "weakPoints", "suggestions", "reviewNeeded", "nextAction"] {
                #expect(json.contains("\"\(key)\""))
            }
        }
    }

    @Test("an empty answer is 0 (没有作答/无法判断); a missed point is named in weakPoints and suggestions, in the answer's language")
    func emptyAndMissed() {
        let analyser = BuiltinLearningAnalyser()
        let empty = analyser.analyse(lesson: Self.chinese, questionId: nil, answer: "  \n ")
        #expect(empty.masteryScore == 0)
        #expect(empty.understandingLevel == "没有作答/无法判断")
        let some = analyser.analyse(lesson: Self.chinese, questionId: "q1", answer: "间隔重复就是隔一段时间复习一次，在快要忘记时复习。")
        #expect(some.weakPoints.contains { $0.contains("回忆失败就缩短间隔") })
        #expect(some.suggestions.contains { $0.contains("补充") })
        let english = analyser.analyse(lesson: Self.english, questionId: "q1", answer: "Rereading only feels familiar.")
        #expect(english.weakPoints.contains { $0.hasPrefix("Misses key points") })
    }

    @Test("the same answer always gets the same analysis, whatever the order of the runs")
    func deterministic() {
        let analyser = BuiltinLearningAnalyser()
        for item in Self.set {
            #expect(analyser.analyse(lesson: item.lesson, questionId: "q1", answer: item.answer)
                    == analyser.analyse(lesson: item.lesson, questionId: "q1", answer: item.answer))
        }
    }

    @Test("terms: CJK runs give character bigrams, Latin runs stemmed words, full-width letters folded")
    func terms() {
        #expect(BuiltinLearningAnalyser.terms("间隔重复") == ["间隔", "隔重", "重复"])
        #expect(BuiltinLearningAnalyser.terms("Spaced repetitions, ＡＩ 工具") == ["spac", "repetition", "ai", "工具"])
        #expect(BuiltinLearningAnalyser.terms("的") == ["的"])
    }
}

/// SM-2 as Woźniak published it, on the seed's 0–5 mastery score.
@Suite("Review scheduling (SM-2)")
struct ReviewSchedulerTests {
    @Test("good answers space reviews 1, 6, then interval × EF days; a failed one starts again at 1 day; EF never below 1.3")
    func intervals() {
        let scheduler = ReviewScheduler()
        var state = ReviewScheduler.State.new
        state = scheduler.next(after: state, quality: 5)
        #expect(state.intervalDays == 1 && state.repetition == 1)
        #expect(abs(state.easeFactor - 2.6) < 1e-9)
        state = scheduler.next(after: state, quality: 4)
        #expect(state.intervalDays == 6 && state.repetition == 2)
        #expect(abs(state.easeFactor - 2.6) < 1e-9)
        state = scheduler.next(after: state, quality: 4)
        #expect(state.intervalDays == 16)
        state = scheduler.next(after: state, quality: 2)
        #expect(state.intervalDays == 1 && state.repetition == 0)
        var low = ReviewScheduler.State.new
        for _ in 0..<10 { low = scheduler.next(after: low, quality: 0) }
        #expect(low.easeFactor == 1.3 && low.intervalDays == 1)
    }
}

/// The one rule of a learning record, as ingest and the aggregator both apply it.
@Suite("Learning records")
struct LearningRecordRuleTests {
    @Test("a NUL in any text, times the wrong way round, a bad score or a lesson listed twice are refused, naming the field")
    func refused() throws {
        let now = Date()
        func session(_ input: String, ended: Date = Date()) -> LearningRecord {
            LearningRecord(kind: .session, userId: "u", receivedAt: now, session: LearningSessionRequest(
                sessionId: "s", lessonId: "l", startedAt: now.addingTimeInterval(-60), endedAt: ended, userInput: input))
        }
        try session("好的").validate()
        #expect(throws: LearningContractViolation.self) { try session("a\u{0}b").validate() }
        #expect(throws: LearningContractViolation.self) { try session("x", ended: now.addingTimeInterval(-3600)).validate() }
        #expect(throws: LearningContractViolation.self) {
            try LearningRecord(kind: .reviewCompleted, userId: "u", receivedAt: now, reviewId: "r", review: .init(masteryScore: 6)).validate()
        }
        let path = LearningPath(id: "p", version: 1, knowledgeBaseId: "kb", title: "t",
                                modules: [LearningModule(id: "m", title: "m", lessonIds: ["a", "a"])])
        do {
            try LearningRecord(kind: .path, userId: nil, receivedAt: now, path: path).validate()
            Issue.record("a lesson listed twice was accepted")
        } catch { #expect(error.field == "modules.lessonIds") }
        #expect(throws: LearningContractViolation.self) {
            try LearningRecord(kind: .session, userId: nil, receivedAt: now, session: session("x").session).validate()
        }
    }

    @Test("a record survives its JSON round trip unchanged")
    func roundTrip() throws {
        let record = LearningRecord(kind: .lesson, userId: nil, receivedAt: Date(timeIntervalSince1970: 1_700_000_000),
                                    lesson: LearningAnalyserTests.english)
        let decoded = try ContractCoding.decode(LearningRecord.self, from: try ContractCoding.encode(record))
        #expect(decoded == record)
        try decoded.validate()
    }
}
