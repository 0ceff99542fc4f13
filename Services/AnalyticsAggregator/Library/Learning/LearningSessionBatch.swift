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

    /// Stores the planned sessions (in the run's order) and their pushes in one statement;
    /// `offsets` are the offsets sessions gave, to remember on the profiles (user → offset and
    /// the latest receipt among the sessions that gave one).
    static func write(_ planned: [Planned], offsets: [String: (offset: Int, at: Date)], replacing pairs: [PairKey],
                      in connection: PostgresConnection) async throws {
        let profiles = offsets.sorted { $0.key < $1.key }
        let sortedPairs = pairs.sorted { ($0.user, $0.lesson) < ($1.user, $1.lesson) }
        var pushes: [String] = []
        var channels: [String] = []
        for plan in planned {
            let ready = LearningAnalysisReady(userId: plan.item.user, sessionId: plan.item.session.sessionId,
                                              lessonId: plan.item.session.lessonId, reviewAt: plan.reviewAt, analysis: plan.analysis)
            let broadcast = RealtimeBroadcast(
                channel: "user:\(plan.item.user)", event: LearningAnalysisReady.event,
                payload: try ContractCoding.decoder.decode(JSONValue.self, from: ContractCoding.encoder.encode(ready)))
            channels.append(broadcast.channel)
            pushes.append(try LearningWriter.text(broadcast))
        }
        func instant(_ date: Date) -> String { date.postgresText ?? "" }
        let sessions = planned.map(\.item.session)
        _ = try await connection.execute(statement, [
            profiles.map(\.key), profiles.map(\.value.offset), profiles.map { instant($0.value.at) },
            sortedPairs.map(\.user), sortedPairs.map(\.lesson),
            sessions.map(\.sessionId), planned.map(\.item.user), sessions.map(\.lessonId), sessions.map { $0.questionId ?? "" },
            sessions.map { instant($0.startedAt) }, sessions.map { instant($0.endedAt) }, sessions.map(\.userInput),
            try planned.map { try LearningWriter.text($0.analysis) }, planned.map(\.analysis.masteryScore), planned.map(\.analyzer),
            planned.map { instant($0.reviewAt) }, planned.map { instant($0.item.receivedAt) },
            planned.map(\.day.description), planned.map(\.status), planned.map(\.state.repetition), planned.map(\.state.intervalDays),
            planned.map { String($0.state.easeFactor) },
            channels, pushes, planned.map { $0.item.trace ?? "" },
        ])
    }

    /// Profiles' offsets ($1–$3), pending reviews of the run's lessons replaced ($4–$5), the
    /// sessions ($6–$17), their review tasks ($18–$22 and the sessions' columns), the pushes
    /// ($23–$25) in the run's order (the outbox's ids give the relay its order).
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
            SELECT * FROM unnest($6::text[], $7::text[], $8::text[], $9::text[], $10::timestamptz[], $11::timestamptz[], $12::text[],
                                 $13::text[], $14::int[], $15::text[], $16::timestamptz[], $17::timestamptz[], $18::text[],
                                 $19::text[], $20::int[], $21::int[], $22::float8[])
                AS t(s, u, l, q, st, en, input, analysis, score, analyzer, review_at, received_at, day, status, rep, iv, ef)
        ), sessions AS (
            INSERT INTO learning_sessions (session_id, user_id, lesson_id, question_id, started_at, ended_at, user_input, analysis,
                                           mastery_score, analyzer, review_at, received_at)
            SELECT s, u, l, NULLIF(q, ''), st, en, input, analysis::jsonb, score, analyzer, review_at, received_at FROM input
        ), tasks AS (
            INSERT INTO learning_review_tasks (id, user_id, lesson_id, source_session_id, review_type, scheduled_at, scheduled_day,
                                               status, repetition, interval_days, ease_factor, mastery_score)
            SELECT 'rv-' || s, u, l, s, 'recall', review_at, day::date, status, rep, iv, ef, score FROM input
            ON CONFLICT (id) DO NOTHING
        )
        INSERT INTO learning_outbox (channel, value, traceparent)
        SELECT t.c, t.v, NULLIF(t.tr, '') FROM unnest($23::text[], $24::text[], $25::text[]) WITH ORDINALITY AS t(c, v, tr, n)
        ORDER BY t.n
        """
}
