import Contracts
import Foundation
import Postgres
import Projection

/// A run of consecutive session records of one fetched batch, applied set-wise: four reads
/// (the ids already stored, the lessons, the users' offsets, the latest SM-2 state of each
/// user's lesson) and one statement of data-modifying CTEs (offsets remembered, pending reviews
/// replaced, sessions, review tasks, `analysis_ready` pushes), whatever the number of sessions —
/// where answering them one by one took eight statements each.
///
/// The outcome is the one of applying the records one after another, in their order: the first
/// record of a session id wins (a later one, in this batch or stored before, changes nothing);
/// an offset a session gives counts from that session on; two sessions of one user's lesson in
/// the run chain their SM-2 states, the earlier review `replaced` by the later.
struct LearningSessionBatch {
    struct Item {
        var user: String
        var session: LearningSessionRequest
        var receivedAt: Date
        var trace: String?
    }

    /// A new session with everything its rows need.
    struct Planned {
        var item: Item
        var analysis: LearningAnalysis
        var analyzer: String
        var day: LocalDay
        var reviewAt: Date
        var state: ReviewScheduler.State
        var status = "pending"
    }

    /// The latest review task of a user's lesson, by `scheduled_at` then id (as
    /// `LearningWriter.latestState` orders them).
    struct Latest {
        var scheduledAt: Date
        var id: String
        var state: ReviewScheduler.State
    }

    struct PairKey: Hashable {
        var user: String
        var lesson: String
    }

    let items: [Item]

    /// The sessions not stored yet, the first record of each id.
    func fresh(in connection: PostgresConnection) async throws -> [Item] {
        let ids = Array(Set(items.map(\.session.sessionId)))
        let rows = try await connection.query("SELECT session_id FROM learning_sessions WHERE session_id = ANY($1::text[])", [ids])
        var seen = Set(try rows.map { try $0.decode(String.self, "session_id") })
        return items.filter { seen.insert($0.session.sessionId).inserted }
    }

    static func lessons(_ ids: Set<String>, in connection: PostgresConnection) async throws -> [String: Lesson] {
        let rows = try await connection.query("SELECT id, doc::text AS doc FROM learning_lessons WHERE id = ANY($1::text[])",
                                              [Array(ids)])
        var lessons: [String: Lesson] = [:]
        for row in rows {
            if let lesson = try? ContractCoding.decode(Lesson.self, from: Array(try row.decode(String.self, "doc").utf8)) {
                lessons[try row.decode(String.self, "id")] = lesson
            }
        }
        return lessons
    }

    /// Each user's offset before the run: the profile's, else that of their latest reading
    /// event (the live reading figures), else UTC — `LearningWriter.offset` for many users.
    static func offsets(_ users: Set<String>, in connection: PostgresConnection) async throws -> [String: Int] {
        let rows = try await connection.query("""
            SELECT u.user_id, COALESCE(p.tz_offset_minutes, a.tz_offset_minutes, 0) AS offset_minutes
            FROM unnest($1::text[]) AS u(user_id)
            LEFT JOIN learning_profiles p ON p.user_id = u.user_id
            LEFT JOIN public.analytics_users a ON a.user_id = u.user_id
            """, [Array(users)])
        var offsets: [String: Int] = [:]
        for row in rows { offsets[try row.decode(String.self, "user_id")] = try row.decode(Int.self, "offset_minutes") }
        return offsets
    }

    /// The latest review task of each pair, if any.
    static func latest(_ pairs: Set<PairKey>, in connection: PostgresConnection) async throws -> [PairKey: Latest] {
        let sorted = pairs.sorted { ($0.user, $0.lesson) < ($1.user, $1.lesson) }
        let rows = try await connection.query("""
            SELECT DISTINCT ON (r.user_id, r.lesson_id) r.user_id, r.lesson_id, r.id, r.scheduled_at, r.repetition,
                   r.interval_days, r.ease_factor
            FROM learning_review_tasks r JOIN unnest($1::text[], $2::text[]) AS t(u, l) ON r.user_id = t.u AND r.lesson_id = t.l
            ORDER BY r.user_id, r.lesson_id, r.scheduled_at DESC, r.id DESC
            """, [sorted.map(\.user), sorted.map(\.lesson)])
        var latest: [PairKey: Latest] = [:]
        for row in rows {
            let key = PairKey(user: try row.decode(String.self, "user_id"), lesson: try row.decode(String.self, "lesson_id"))
            latest[key] = Latest(scheduledAt: try row.decode(Date.self, "scheduled_at"), id: try row.decode(String.self, "id"),
                                 state: .init(repetition: try row.decode(Int.self, "repetition"),
                                              intervalDays: try row.decode(Int.self, "interval_days"),
                                              easeFactor: try row.decode(Double.self, "ease_factor")))
        }
        return latest
    }

    /// One session's row of the statement's input, as JSON (`json_to_recordset`): one
    /// parameter for the whole run, encoded by Foundation's encoder, instead of a Postgres array
    /// literal a column (whose quoting of each answer and analysis, character by character, was
    /// the write's main cost).
    struct Row: Encodable {
        var n: Int
        var s: String
        var u: String
        var l: String
        var q: String?
        var st: String
        var en: String
        var input: String
        var analysis: String
        var score: Int
        var analyzer: String
        var reviewAt: String
        var receivedAt: String
        var day: String
        var status: String
        var rep: Int
        var iv: Int
        var ef: Double
        var channel: String
        var push: String
        var trace: String?
    }

    /// A `RealtimeBroadcast` of `analysis_ready`, its payload encoded straight from the typed
    /// value (the same JSON as the broadcast's, without the round trip through `JSONValue`, which
    /// cost more than the analysis).
    struct ReadyBroadcast: Encodable {
        var schemaVersion = 1
        var channel: String
        var event = LearningAnalysisReady.event
        var payload: LearningAnalysisReady
    }

    static let rowEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }()

    /// Stores the planned sessions (in the run's order) and their pushes in one statement;
    /// `offsets` are the offsets sessions gave, to remember on the profiles (user → offset and
    /// the latest receipt among the sessions that gave one).
    static func write(_ planned: [Planned], offsets: [String: (offset: Int, at: Date)], replacing pairs: [PairKey],
                      in connection: PostgresConnection) async throws {
        let profiles = offsets.sorted { $0.key < $1.key }
        let sortedPairs = pairs.sorted { ($0.user, $0.lesson) < ($1.user, $1.lesson) }
        func instant(_ date: Date) -> String { date.postgresText ?? "" }
        var rows: [Row] = []
        rows.reserveCapacity(planned.count)
        for (index, plan) in planned.enumerated() {
            let session = plan.item.session
            let ready = LearningAnalysisReady(userId: plan.item.user, sessionId: session.sessionId, lessonId: session.lessonId,
                                              reviewAt: plan.reviewAt, analysis: plan.analysis)
            let broadcast = ReadyBroadcast(channel: "user:\(plan.item.user)", payload: ready)
            rows.append(Row(n: index, s: session.sessionId, u: plan.item.user, l: session.lessonId, q: session.questionId,
                            st: instant(session.startedAt), en: instant(session.endedAt), input: session.userInput,
                            analysis: try LearningWriter.text(plan.analysis), score: plan.analysis.masteryScore,
                            analyzer: plan.analyzer, reviewAt: instant(plan.reviewAt), receivedAt: instant(plan.item.receivedAt),
                            day: plan.day.description, status: plan.status, rep: plan.state.repetition, iv: plan.state.intervalDays,
                            ef: plan.state.easeFactor, channel: broadcast.channel, push: try LearningWriter.text(broadcast),
                            trace: plan.item.trace))
        }
        let input = String(decoding: try rowEncoder.encode(rows), as: UTF8.self)
        _ = try await connection.execute(statement, [
            profiles.map(\.key), profiles.map(\.value.offset), profiles.map { instant($0.value.at) },
            sortedPairs.map(\.user), sortedPairs.map(\.lesson), input,
        ])
    }

    /// Profiles' offsets ($1–$3), pending reviews of the run's lessons replaced ($4–$5), then
    /// from the rows ($6): the sessions, their review tasks and the pushes in the run's order
    /// (the outbox's ids give the relay its order).
    static let statement = """
        WITH profiles AS (
            INSERT INTO learning_profiles (user_id, tz_offset_minutes, updated_at)
            SELECT t.u, t.tz, t.at FROM unnest($1::text[], $2::int[], $3::timestamptz[]) AS t(u, tz, at)
            ON CONFLICT (user_id) DO UPDATE SET tz_offset_minutes = EXCLUDED.tz_offset_minutes,
                updated_at = GREATEST(learning_profiles.updated_at, EXCLUDED.updated_at)
        ), replaced AS (
            UPDATE learning_review_tasks r SET status = 'replaced' FROM unnest($4::text[], $5::text[]) AS t(u, l)
            WHERE r.user_id = t.u AND r.lesson_id = t.l AND r.status = 'pending'
        ), input AS MATERIALIZED (
            SELECT * FROM json_to_recordset($6::json) AS t(
                n int, s text, u text, l text, q text, st timestamptz, en timestamptz, input text, analysis text, score int,
                analyzer text, "reviewAt" timestamptz, "receivedAt" timestamptz, day date, status text, rep int, iv int, ef float8,
                channel text, push text, trace text)
        ), sessions AS (
            INSERT INTO learning_sessions (session_id, user_id, lesson_id, question_id, started_at, ended_at, user_input, analysis,
                                           mastery_score, analyzer, review_at, received_at)
            SELECT s, u, l, q, st, en, input, analysis::jsonb, score, analyzer, "reviewAt", "receivedAt" FROM input
        ), tasks AS (
            INSERT INTO learning_review_tasks (id, user_id, lesson_id, source_session_id, review_type, scheduled_at, scheduled_day,
                                               status, repetition, interval_days, ease_factor, mastery_score)
            SELECT 'rv-' || s, u, l, s, 'recall', "reviewAt", day, status, rep, iv, ef, score FROM input
            ON CONFLICT (id) DO NOTHING
        )
        INSERT INTO learning_outbox (channel, value, traceparent) SELECT channel, push, trace FROM input ORDER BY n
        """
}
