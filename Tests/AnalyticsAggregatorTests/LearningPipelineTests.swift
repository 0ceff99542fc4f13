@testable import AnalyticsAggregator
import BackboneTestSupport
import Contracts
import Foundation
import Postgres
import Projection
import ServiceLogging
import Testing

/// The learning projection against a real PostgreSQL, applied as the runner applies it (one
/// transaction per fetched batch): the sessions of a batch written set-wise give what they gave
/// one by one, and a configured model analyses the pipeline's sessions within a per-batch budget.
@Suite("Learning pipeline (PostgreSQL)", .serialized, .timeLimit(.minutes(3)),
       .enabled(if: Integration.isEnabled, "needs BACKBONE_INTEGRATION=1 and TEST_DATABASE_URL"))
struct LearningPipelineTests {
    static let t0 = Date(timeIntervalSince1970: 1_780_000_000)

    static func at(_ minutes: Int) -> Date { t0.addingTimeInterval(Double(minutes) * 60) }

    static func session(_ user: String, _ id: String, _ lesson: String, _ answer: String, minute: Int, offset: Int? = nil,
                        question: String? = "q1") -> LearningRecord {
        LearningRecord(kind: .session, userId: user, receivedAt: at(minute + 1),
                       session: LearningSessionRequest(sessionId: id, lessonId: lesson, startedAt: at(minute - 5), endedAt: at(minute),
                                                       userInput: answer, questionId: question, clientTimezoneOffsetMinutes: offset))
    }

    static let all = LearningAnalyserTests.set.filter { $0.label == .all }.map(\.answer)
    static let some = LearningAnalyserTests.set.filter { $0.label == .some }.map(\.answer)
    static let none = LearningAnalyserTests.set.filter { $0.label == .none }.map(\.answer)

    /// A user's history with everything that orders: repeated lessons (SM-2 chains, replaced
    /// reviews), offsets given midway, a goal and a review completion between sessions, a
    /// session id sent twice and reused by another user, a lesson nobody wrote, feedback.
    static let records: [LearningRecord] = [
        LearningRecord(kind: .lesson, userId: nil, receivedAt: at(0), lesson: LearningAnalyserTests.chinese),
        LearningRecord(kind: .lesson, userId: nil, receivedAt: at(0), lesson: LearningAnalyserTests.english),
        session("u1", "s1", "zh-spaced", all[0], minute: 10),
        session("u1", "s2", "zh-spaced", some[0], minute: 20, offset: 480),
        session("u2", "s3", "en-recall", all[2], minute: 21),
        session("u1", "s2", "zh-spaced", all[1], minute: 22),
        session("u3", "s3", "en-recall", none[2], minute: 23),
        LearningRecord(kind: .reviewCompleted, userId: "u2", receivedAt: at(30), reviewId: "rv-s3",
                       review: ReviewCompletionRequest(masteryScore: 5)),
        LearningRecord(kind: .goal, userId: "u3", receivedAt: at(31),
                       goal: LearningGoalRequest(knowledgeBaseId: "kb", pathId: "p", clientTimezoneOffsetMinutes: -300)),
        session("u3", "s4", "en-recall", some[2], minute: 40),
        session("u1", "s5", "zh-spaced", all[0], minute: 50),
        session("u2", "s6", "en-recall", none[3], minute: 60, offset: 840),
        session("u2", "s7", "nowhere", some[1], minute: 61, question: nil),
        LearningRecord(kind: .feedback, userId: "u2", receivedAt: at(62), feedback: FeedbackRequest(feedbackId: "f1", text: "好用")),
        session("u1", "s8", "zh-spaced", "", minute: 70),
        session("u2", "s9", "en-recall", all[3], minute: 80),
    ]

    static func apply(_ records: [LearningRecord], batch: Int, projection: LearningProjection = LearningProjection(outbox: nil),
                      to db: ScratchDatabase) async throws {
        var offset: Int64 = 0
        for start in stride(from: 0, to: records.count, by: batch) {
            let chunk = records[start..<min(start + batch, records.count)].map { record in
                offset += 1
                return ProjectedEvent(event: record, topic: Topics.learningSessions, partition: 0, offset: offset)
            }
            _ = try await db.client.withTransaction { connection in try await projection.apply(chunk, in: connection) }
        }
    }

    static func snapshot(_ db: ScratchDatabase) async throws -> [String] {
        let queries = [
            """
            SELECT session_id, user_id, lesson_id, COALESCE(question_id, '-'), started_at::text, ended_at::text, user_input,
                   analysis::text, mastery_score, analyzer, COALESCE(review_at::text, '-'), received_at::text
            FROM learning_sessions ORDER BY 1
            """,
            """
            SELECT id, user_id, lesson_id, source_session_id, review_type, scheduled_at::text, scheduled_day::text, status,
                   COALESCE(completed_at::text, '-'), repetition, interval_days, ease_factor, mastery_score
            FROM learning_review_tasks ORDER BY 1
            """,
            "SELECT user_id, COALESCE(knowledge_base_id, '-'), COALESCE(path_id, '-'), tz_offset_minutes, updated_at::text FROM learning_profiles ORDER BY 1",
            "SELECT channel, value, COALESCE(traceparent, '-') FROM learning_outbox ORDER BY id",
            "SELECT id, user_id, text FROM learning_feedback ORDER BY 1",
        ]
        var lines: [String] = []
        for sql in queries {
            for row in try await db.client.query(sql) {
                lines.append(row.columns.indices.map { row.text(row.columns[$0]) ?? "NULL" }.joined(separator: "|"))
            }
            lines.append("--")
        }
        return lines
    }

    @Test("sessions applied together in one batch leave exactly what they leave one record at a time: analyses, SM-2 chains, replaced and completed reviews, offsets, pushes in order, first session id wins")
    func batchEqualsOneByOne() async throws {
        let single = try await ScratchDatabase.create("learning_single")
        let batched = try await ScratchDatabase.create("learning_batched")
        defer { Task { await single.drop(); await batched.drop() } }
        try await Self.apply(Self.records, batch: 1, to: single)
        try await Self.apply(Self.records, batch: 500, to: batched)
        let one = try await Self.snapshot(single)
        let many = try await Self.snapshot(batched)
        #expect(one.count == many.count)
        for (a, b) in zip(one, many) { #expect(a == b) }
        // What a user would notice, in the batched model: one push per session kept, s3 kept as
        // u2's (u3's reuse ignored), u1's second answer chained on the first (a later review,
        // the earlier one replaced), u2's completed review rescheduled.
        let sessions = try await batched.client.query("SELECT session_id, user_id FROM learning_sessions ORDER BY 1")
        #expect(try sessions.map { try $0.decode(String.self, "session_id") } == ["s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"])
        #expect(try sessions.first { try $0.decode(String.self, "session_id") == "s3" }?.decode(String.self, "user_id") == "u2")
        let pushes = try await batched.client.query("SELECT count(*)::bigint AS n FROM learning_outbox")
        #expect(try pushes.first?.decode(Int64.self, "n") == 9)
        // The push is a realtime broadcast the notifier reads: analysis_ready on user:u1 with s1's analysis.
        let first = try #require(try await batched.client.query("SELECT value FROM learning_outbox ORDER BY id LIMIT 1").first)
        let broadcast = try ContractCoding.decode(RealtimeBroadcast.self, from: Array(try first.decode(String.self, "value").utf8))
        #expect(broadcast.channel == "user:u1" && broadcast.event == "analysis_ready" && broadcast.schemaVersion == 1)
        let ready = try ContractCoding.decode(LearningAnalysisReady.self, from: try ContractCoding.encode(broadcast.payload))
        let stored = try #require(try await batched.client.query("SELECT analysis::text AS a FROM learning_sessions WHERE session_id = 's1'").first)
        #expect(ready.sessionId == "s1" && ready.userId == "u1" && ready.lessonId == "zh-spaced")
        #expect(ready.analysis == (try ContractCoding.decode(LearningAnalysis.self, from: Array(try stored.decode(String.self, "a").utf8))))
        #expect(ready.masteryScore == ready.analysis.masteryScore && ready.reviewAt != nil)
        let u1 = try await batched.client.query("""
            SELECT id, status, repetition FROM learning_review_tasks WHERE user_id = 'u1' ORDER BY scheduled_at, id
            """)
        let statuses = Dictionary(uniqueKeysWithValues: try u1.map { (try $0.decode(String.self, "id"), try $0.decode(String.self, "status")) })
        #expect(statuses == ["rv-s1": "replaced", "rv-s2": "replaced", "rv-s5": "replaced", "rv-s8": "pending"])
        let completed = try await batched.client.query("SELECT status FROM learning_review_tasks WHERE id = 'rv-s3'")
        #expect(try completed.first?.decode(String.self, "status") == "completed")
        let profile = try await batched.client.query("SELECT tz_offset_minutes FROM learning_profiles WHERE user_id = 'u2'")
        #expect(try profile.first?.decode(Int.self, "tz_offset_minutes") == 840)
    }

    @Test("500 sessions of 50 learners in one batch (ten of each learner in it) leave exactly what they leave applied one at a time")
    func largeBatchMatchesOneByOne() async throws {
        let single = try await ScratchDatabase.create("learning_single_large")
        let batched = try await ScratchDatabase.create("learning_batched_large")
        defer { Task { await single.drop(); await batched.drop() } }
        let catalog = Array(Self.records.prefix(2))
        let sessions = (0..<500).map { i in
            Self.session("user-\(i % 50)", "load-\(i)", i % 2 == 0 ? "zh-spaced" : "en-recall", Self.some[i % Self.some.count],
                         minute: 100 + i)
        }
        try await Self.apply(catalog, batch: 10, to: single)
        try await Self.apply(catalog, batch: 10, to: batched)
        try await Self.apply(sessions, batch: 1, to: single)
        try await Self.apply(sessions, batch: 500, to: batched)
        // How much cheaper the batch is is the benchmark's to show (docs/benchmarks.md), not a timed test's.
        #expect(try await Self.snapshot(single) == Self.snapshot(batched))
    }

    @Test("with a model configured, the pipeline's sessions are analysed by it (the analyser recorded); a malformed answer falls back to the built-in analyser; a slow model never holds a batch past its budget")
    func modelOnThePipeline() async throws {
        try await ChatCompletionsAnalyserTests.withServer { base in
            func projection(_ mode: String, timeout: Int = 5, retries: Int = 0, budget: Double = 10) -> LearningProjection {
                LearningProjection(outbox: nil, model: ChatCompletionsAnalyser(
                    configuration: AIConfiguration(url: "\(base)/\(mode)/v1", apiKey: "sk-test", model: "test-model",
                                                   timeoutSeconds: timeout, retries: retries, pipelineBudgetSeconds: budget,
                                                   pipelineConcurrency: 2),
                    logger: .disabled))
            }
            let catalog = Array(Self.records.prefix(2))
            for (mode, expected) in [("good", "test-model"), ("malformed", BuiltinLearningAnalyser.name), ("flaky", "test-model")] {
                let db = try await ScratchDatabase.create("learning_model_\(mode)")
                defer { Task { await db.drop() } }
                let records = catalog + (0..<3).map { Self.session("u1", "m-\($0)", "zh-spaced", Self.some[0], minute: 10 + $0) }
                try await Self.apply(records, batch: 10, projection: projection(mode, retries: 1), to: db)
                let rows = try await db.client.query("SELECT analyzer, mastery_score, analysis::text AS a FROM learning_sessions")
                #expect(rows.count == 3)
                for row in rows {
                    #expect(try row.decode(String.self, "analyzer") == expected, "\(mode)")
                    if expected == "test-model" {
                        #expect(try row.decode(Int.self, "mastery_score") == 4)
                        #expect(try row.decode(String.self, "a").contains("model=test-model auth=Bearer sk-test"))
                    }
                }
                let pushes = try await db.client.query("SELECT value FROM learning_outbox")
                #expect(pushes.count == 3)
                if expected == "test-model" {
                    #expect(try pushes.allSatisfy { try $0.decode(String.self, "value").contains("model=test-model") })
                }
            }
            // The slow model answers after 3 s; the batch's budget is 1 s: the batch commits in
            // about that, every session with the built-in analysis, and the next batch is not held.
            let db = try await ScratchDatabase.create("learning_model_slow")
            defer { Task { await db.drop() } }
            try await Self.apply(catalog, batch: 10, to: db)
            let slow = projection("slow", timeout: 10, retries: 0, budget: 1)
            let records = (0..<5).map { Self.session("u1", "slow-\($0)", "zh-spaced", Self.all[0], minute: 10 + $0) }
            let elapsed = try await ContinuousClock().measure { try await Self.apply(records, batch: 5, projection: slow, to: db) }
            #expect(elapsed < .milliseconds(2_500), "a batch took \(elapsed) with a 1 s budget")
            let rows = try await db.client.query("SELECT analyzer FROM learning_sessions")
            #expect(rows.count == 5)
            #expect(try rows.allSatisfy { try $0.decode(String.self, "analyzer") == BuiltinLearningAnalyser.name })
        }
    }
}
