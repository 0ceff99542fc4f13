import Contracts
import Foundation
import Postgres

/// The queries of the learning routes over `LearningSchema`'s tables.
public struct LearningReadModel: Sendable {
    let database: PostgresClient

    public init(database: PostgresClient) { self.database = database }

    static func decode<T: Decodable>(_ type: T.Type, _ row: PostgresRow, _ column: String = "doc") throws -> T {
        try ContractCoding.decode(T.self, from: Array(try row.decode(String.self, column).utf8))
    }

    // MARK: - Catalog

    func knowledgeBases() async throws -> [KnowledgeBase] {
        try await database.query("SELECT doc::text AS doc FROM learning_knowledge_bases ORDER BY id").map { try Self.decode(KnowledgeBase.self, $0) }
    }

    func knowledgeBase(_ id: String) async throws -> KnowledgeBaseDetail? {
        guard let row = try await database.query("SELECT doc::text AS doc FROM learning_knowledge_bases WHERE id = $1", [id]).first else {
            return nil
        }
        let paths = try await database.query("SELECT doc::text AS doc FROM learning_paths WHERE knowledge_base_id = $1 ORDER BY id", [id])
            .map { try Self.decode(LearningPath.self, $0) }
        return KnowledgeBaseDetail(knowledgeBase: try Self.decode(KnowledgeBase.self, row), paths: paths.map {
            PathSummary(id: $0.id, title: $0.title, summary: $0.summary, estimatedDays: $0.estimatedDays, lessonCount: $0.lessonIds.count)
        })
    }

    func path(_ id: String) async throws -> LearningPath? {
        guard let row = try await database.query("SELECT doc::text AS doc FROM learning_paths WHERE id = $1", [id]).first else { return nil }
        return try Self.decode(LearningPath.self, row)
    }

    /// The lessons of `ids` that exist, by id.
    func lessonSummaries(_ ids: [String]) async throws -> [String: LessonSummary] {
        let rows = try await database.query("""
            SELECT id, doc->>'title' AS title, (doc->>'estimatedMinutes')::integer AS minutes FROM learning_lessons WHERE id = ANY($1::text[])
            """, [ids])
        var out: [String: LessonSummary] = [:]
        for row in rows {
            let id = try row.decode(String.self, "id")
            out[id] = LessonSummary(id: id, title: try row.decode(String.self, "title"), estimatedMinutes: try row.decode(Int?.self, "minutes"))
        }
        return out
    }

    func pathDetail(_ id: String) async throws -> PathDetail? {
        guard let path = try await path(id) else { return nil }
        let lessons = try await lessonSummaries(path.lessonIds)
        return PathDetail(path: path, modules: path.modules.map { module in
            PathDetail.Module(id: module.id, title: module.title, lessons: module.lessonIds.compactMap { lessons[$0] })
        })
    }

    func lesson(_ id: String) async throws -> Lesson? {
        guard let row = try await database.query("SELECT doc::text AS doc FROM learning_lessons WHERE id = $1", [id]).first else { return nil }
        return try Self.decode(Lesson.self, row)
    }

    // MARK: - The learner

    struct Profile: Sendable {
        var knowledgeBaseID: String?
        var pathID: String?
        var offsetMinutes: Int
        var updatedAt: Date?
    }

    /// The goal and offset of `user` (the offset of their latest reading event, else UTC, when
    /// no learning write gave one).
    func profile(_ user: String) async throws -> Profile {
        let rows = try await database.query("""
            SELECT p.knowledge_base_id, p.path_id, p.updated_at,
                   COALESCE(p.tz_offset_minutes, (SELECT tz_offset_minutes FROM analytics_users WHERE user_id = $1), 0) AS offset_minutes
            FROM (SELECT $1::text AS user_id) u LEFT JOIN learning_profiles p ON p.user_id = u.user_id
            """, [user])
        guard let row = rows.first else { return Profile(offsetMinutes: 0) }
        return Profile(knowledgeBaseID: try row.decode(String?.self, "knowledge_base_id"), pathID: try row.decode(String?.self, "path_id"),
                       offsetMinutes: try row.decode(Int.self, "offset_minutes"), updatedAt: try row.decode(Date?.self, "updated_at"))
    }

    static let sessionColumns = "session_id, user_id, lesson_id, started_at, ended_at, user_input, analysis::text AS analysis, analyzer, review_at"

    static func session(_ row: PostgresRow) throws -> LearningSessionView {
        LearningSessionView(id: try row.decode(String.self, "session_id"), userId: try row.decode(String.self, "user_id"),
                            lessonId: try row.decode(String.self, "lesson_id"), startedAt: try row.decode(Date.self, "started_at"),
                            endedAt: try row.decode(Date.self, "ended_at"), userInput: try row.decode(String.self, "user_input"),
                            aiAnalysis: try decode(LearningAnalysis.self, row, "analysis"), reviewAt: try row.decode(Date?.self, "review_at"),
                            analyzer: try row.decode(String.self, "analyzer"))
    }

    func session(_ id: String, user: String) async throws -> LearningSessionView? {
        try await database.query("SELECT \(Self.sessionColumns) FROM learning_sessions WHERE session_id = $1 AND user_id = $2", [id, user])
            .first.map(Self.session)
    }

    func recentSessions(user: String, limit: Int) async throws -> [LearningSessionView] {
        try await database.query("""
            SELECT \(Self.sessionColumns) FROM learning_sessions WHERE user_id = $1 ORDER BY ended_at DESC, session_id DESC LIMIT $2
            """, [user, limit]).map(Self.session)
    }

    /// The latest score of each lesson the user has a session of.
    func latestScores(user: String) async throws -> [String: Int] {
        let rows = try await database.query("""
            SELECT DISTINCT ON (lesson_id) lesson_id, mastery_score FROM learning_sessions WHERE user_id = $1
            ORDER BY lesson_id, ended_at DESC, session_id DESC
            """, [user])
        var out: [String: Int] = [:]
        for row in rows { out[try row.decode(String.self, "lesson_id")] = try row.decode(Int.self, "mastery_score") }
        return out
    }

    static let taskColumns = """
        id, user_id, lesson_id, source_session_id, review_type, scheduled_at, scheduled_day::text AS day, completed_at, status,
        repetition, interval_days, ease_factor
        """

    static func task(_ row: PostgresRow) throws -> ReviewTask {
        ReviewTask(id: try row.decode(String.self, "id"), userId: try row.decode(String.self, "user_id"),
                   lessonId: try row.decode(String.self, "lesson_id"), sourceSessionId: try row.decode(String.self, "source_session_id"),
                   reviewType: try row.decode(String.self, "review_type"), scheduledAt: try row.decode(Date.self, "scheduled_at"),
                   scheduledDay: try row.decode(String.self, "day"), completedAt: try row.decode(Date?.self, "completed_at"),
                   status: try row.decode(String.self, "status"), repetition: try row.decode(Int.self, "repetition"),
                   intervalDays: try row.decode(Int.self, "interval_days"), easeFactor: try row.decode(Double.self, "ease_factor"))
    }

    /// Pending reviews by due day (up to `through` when given).
    func pendingReviews(user: String, through: LocalDay? = nil) async throws -> [ReviewTask] {
        try await database.query("""
            SELECT \(Self.taskColumns) FROM learning_review_tasks
            WHERE user_id = $1 AND status = 'pending' AND ($2::date IS NULL OR scheduled_day <= $2::date)
            ORDER BY scheduled_day, id LIMIT 500
            """, [user, through?.description]).map(Self.task)
    }

    func completedReviews(user: String, limit: Int) async throws -> [ReviewTask] {
        try await database.query("""
            SELECT \(Self.taskColumns) FROM learning_review_tasks WHERE user_id = $1 AND status = 'completed'
            ORDER BY completed_at DESC, id DESC LIMIT $2
            """, [user, limit]).map(Self.task)
    }
}
