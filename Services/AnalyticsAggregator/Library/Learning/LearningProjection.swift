import Contracts
import Foundation
import Kafka
import Postgres
import Projection
import ServiceLogging
import UserErasure

/// `learning.sessions.v1` → the learning read model (`LearningSchema`), effectively once: every
/// write is idempotent per record (catalog rows move only to a higher version, a session is
/// inserted once by its id, a review completes once), in the runner's batch transaction.
///
/// A session is analysed here (the built-in analyser: deterministic, so a replay or a rebuild
/// gives the same analysis), scheduled for review by SM-2, and announced: an `analysis_ready`
/// broadcast for `user:{id}` goes into `learning_outbox` in the same transaction, published
/// after the commit (and by the outbox relay if that publish fails).
public struct LearningProjection: Projection {
    public typealias Event = LearningRecord
    /// Whether the batch left pushes in the outbox.
    public typealias Effects = Bool

    let erasedUsers = ErasedUsers(service: AnalyticsErasure.service)
    let analyser: PipelineAnalyser
    let scheduler = ReviewScheduler()
    let outbox: KeyedRecordOutbox?

    /// `model`: the adapter the pipeline's sessions go through (bounded per batch, falling back
    /// to the built-in analyser); nil: the built-in analyser alone (deterministic: a replay or a
    /// rebuild gives the same analyses).
    public init(outbox: KeyedRecordOutbox?, model: ChatCompletionsAnalyser? = nil) {
        self.outbox = outbox
        self.analyser = PipelineAnalyser(model: model)
    }

    /// The outbox of `analysis_ready` pushes, for the relay and the after-commit publish.
    public static func outbox(database: PostgresClient, producer: any KafkaRecordSender, topic: String) -> KeyedRecordOutbox {
        KeyedRecordOutbox(database: database, producer: producer, table: "learning_outbox", keyColumn: "channel", topic: topic,
                          lockKey: 0x4C45_4152_4E00, traceColumn: "traceparent")
    }

    public func decode(_ record: KafkaConsumerRecord) throws -> LearningRecord {
        let value: LearningRecord
        do {
            value = try ContractCoding.decode(LearningRecord.self, from: record.value)
        } catch {
            throw AnalyticsRecordError(code: .undecodable, message: "not a learning record: \(error)")
        }
        do { try value.validate() } catch {
            throw AnalyticsRecordError(code: .invalidField, message: error.message, context: ["field": error.field])
        }
        return value
    }

    public func apply(_ events: [ProjectedEvent<LearningRecord>], in connection: PostgresConnection) async throws -> Bool {
        let erased = try await erasedUsers.erased(among: Set(events.compactMap(\.event.userId)), in: connection)
        var pushes = false
        // The catalog's records first: they all come from the one `catalog` partition, so each
        // partition keeps its order, and a session of a batch finds the lesson written in it (a
        // replay or a rebuild reads the partitions side by side).
        let ordered = events.filter { $0.event.userId == nil } + events.filter { $0.event.userId != nil }
        // Consecutive sessions are applied together (`LearningSessionBatch`), in their place
        // among the other records.
        var run: [LearningSessionBatch.Item] = []
        for projected in ordered {
            let record = projected.event
            if let user = record.userId, erased.contains(user) { continue }
            if record.kind == .session, let user = record.userId, let session = record.session {
                run.append(.init(user: user, session: session, receivedAt: record.receivedAt, trace: projected.trace?.traceparent))
                continue
            }
            if !run.isEmpty {
                pushes = try await applySessions(run, in: connection) || pushes
                run = []
            }
            switch record.kind {
            case .knowledgeBase:
                if let base = record.knowledgeBase {
                    try await LearningWriter.upsertCatalog(table: "learning_knowledge_bases", id: base.id, baseID: nil,
                                                           version: base.version, doc: base, at: record.receivedAt, in: connection)
                }
            case .path:
                if let path = record.path {
                    try await LearningWriter.upsertCatalog(table: "learning_paths", id: path.id, baseID: path.knowledgeBaseId,
                                                           version: path.version, doc: path, at: record.receivedAt, in: connection)
                }
            case .lesson:
                if let lesson = record.lesson {
                    try await LearningWriter.upsertCatalog(table: "learning_lessons", id: lesson.id, baseID: lesson.knowledgeBaseId,
                                                           version: lesson.version, doc: lesson, at: record.receivedAt, in: connection)
                }
            case .goal:
                if let user = record.userId, let goal = record.goal {
                    try await LearningWriter.setGoal(user: user, goal, at: record.receivedAt, in: connection)
                }
            case .session:
                break
            case .feedback:
                if let user = record.userId, let feedback = record.feedback, let id = feedback.feedbackId {
                    _ = try await connection.execute("""
                        INSERT INTO learning_feedback (id, user_id, text, lesson_id, session_id, app_version, rating, created_at)
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING
                        """, [id, user, feedback.text, feedback.lessonId, feedback.sessionId, feedback.appVersion, feedback.rating,
                              record.receivedAt])
                }
            case .reviewCompleted:
                if let user = record.userId, let id = record.reviewId {
                    try await completeReview(user: user, id: id, score: record.review?.masteryScore, at: record.receivedAt,
                                             in: connection)
                }
            }
        }
        if !run.isEmpty { pushes = try await applySessions(run, in: connection) || pushes }
        return pushes
    }

    public func afterCommit(_ effects: Bool) async throws {
        guard effects, let outbox else { return }
        // Another instance (or the relay) may hold the publisher's lock: it publishes these too.
        _ = try? await outbox.publishPending(olderThan: .zero, limit: 1_000)
    }

    public func combine(_ effects: [Bool]) -> [Bool] { effects.contains(true) ? [true] : [false] }

    /// Analyses and stores the sessions of a run seen for the first time, schedules their
    /// reviews and queues their pushes, set-wise; a session id seen before changes nothing.
    func applySessions(_ items: [LearningSessionBatch.Item], in connection: PostgresConnection) async throws -> Bool {
        let fresh = try await LearningSessionBatch(items: items).fresh(in: connection)
        guard !fresh.isEmpty else { return false }
        let lessons = try await LearningSessionBatch.lessons(Set(fresh.map(\.session.lessonId)), in: connection)
        var offsets = try await LearningSessionBatch.offsets(Set(fresh.map(\.user)), in: connection)
        let pairs = Set(fresh.map { LearningSessionBatch.PairKey(user: $0.user, lesson: $0.session.lessonId) })
        var latest = try await LearningSessionBatch.latest(pairs, in: connection)
        let analyses = await analyser.analyse(fresh.map {
            PipelineAnalyser.Question(lesson: lessons[$0.session.lessonId], questionId: $0.session.questionId, answer: $0.session.userInput)
        })
        var given: [String: (offset: Int, at: Date)] = [:]
        var planned: [LearningSessionBatch.Planned] = []
        var pending: [LearningSessionBatch.PairKey: Int] = [:]
        for (index, item) in fresh.enumerated() {
            let session = item.session
            let key = LearningSessionBatch.PairKey(user: item.user, lesson: session.lessonId)
            if let offset = session.clientTimezoneOffsetMinutes {
                offsets[item.user] = offset
                given[item.user] = (offset, max(given[item.user]?.at ?? item.receivedAt, item.receivedAt))
            }
            let offset = offsets[item.user] ?? 0
            let (analysis, analyzer) = analyses[index]
            let state = scheduler.next(after: latest[key]?.state ?? .new, quality: analysis.masteryScore)
            let day = LearningWriter.day(LocalDay(instant: session.endedAt, offsetMinutes: offset), plus: state.intervalDays)
            let reviewAt = LearningWriter.midnight(of: day, offsetMinutes: offset)
            let id = "rv-\(session.sessionId)"
            if let previous = pending[key] { planned[previous].status = "replaced" }
            pending[key] = planned.count
            planned.append(.init(item: item, analysis: analysis, analyzer: analyzer, day: day, reviewAt: reviewAt, state: state))
            if let known = latest[key], (known.scheduledAt, known.id) > (reviewAt, id) { continue }
            latest[key] = .init(scheduledAt: reviewAt, id: id, state: state)
        }
        try await LearningSessionBatch.write(planned, offsets: given, replacing: Array(pairs), in: connection)
        return true
    }

    /// Completes a pending review of `user` and schedules the next one by SM-2 with the score
    /// given (else the score that scheduled it); an unknown, another user's or an already
    /// completed review changes nothing.
    func completeReview(user: String, id: String, score: Int?, at: Date, in connection: PostgresConnection) async throws {
        let rows = try await connection.query("""
            SELECT lesson_id, source_session_id, repetition, interval_days, ease_factor, mastery_score FROM learning_review_tasks
            WHERE id = $1 AND user_id = $2 AND status = 'pending' FOR UPDATE
            """, [id, user])
        guard let row = rows.first else { return }
        let lesson = try row.decode(String.self, "lesson_id")
        let source = try row.decode(String.self, "source_session_id")
        let stored = try row.decode(Int.self, "mastery_score")
        let quality = score ?? stored
        let state = scheduler.next(after: .init(repetition: try row.decode(Int.self, "repetition"),
                                                intervalDays: try row.decode(Int.self, "interval_days"),
                                                easeFactor: try row.decode(Double.self, "ease_factor")), quality: quality)
        _ = try await connection.execute(
            "UPDATE learning_review_tasks SET status = 'completed', completed_at = $2 WHERE id = $1", [id, at])
        let offset = try await LearningWriter.offset(user: user, given: nil, at: at, in: connection)
        let day = LearningWriter.day(LocalDay(instant: at, offsetMinutes: offset), plus: state.intervalDays)
        let generation = try await connection.query("SELECT count(*)::bigint AS n FROM learning_review_tasks WHERE source_session_id = $1",
                                                    [source])
        let next = "rv-\(source)-\(try generation.first?.decode(Int64.self, "n") ?? 1)"
        try await LearningWriter.insertTask(id: next, user: user, lesson: lesson, source: source, day: day,
                                            at: LearningWriter.midnight(of: day, offsetMinutes: offset), state: state, score: quality,
                                            in: connection)
    }
}
