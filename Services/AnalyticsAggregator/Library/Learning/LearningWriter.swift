import Contracts
import Foundation
import Postgres

/// The learning projection's statements, inside the batch transaction.
enum LearningWriter {
    /// JSON text of a wire value (what the jsonb columns and the outbox hold).
    static func text(_ value: some Encodable) throws -> String {
        String(decoding: try ContractCoding.encode(value), as: UTF8.self)
    }

    /// Inserts a catalog document, or replaces the stored one when `version` is above it.
    static func upsertCatalog(table: String, id: String, baseID: String?, version: Int, doc: some Encodable, at: Date,
                              in connection: PostgresConnection) async throws {
        let base = baseID == nil ? "" : ", knowledge_base_id"
        let baseValue = baseID == nil ? "" : ", $5"
        let baseSet = baseID == nil ? "" : ", knowledge_base_id = EXCLUDED.knowledge_base_id"
        var binds: [any PostgresBindable] = [id, version, try text(doc), at]
        if let baseID { binds.append(baseID) }
        _ = try await connection.execute("""
            INSERT INTO \(table) (id, version, doc, updated_at\(base)) VALUES ($1, $2, $3::jsonb, $4\(baseValue))
            ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, doc = EXCLUDED.doc, updated_at = EXCLUDED.updated_at\(baseSet)
            WHERE \(table).version < EXCLUDED.version
            """, binds)
    }

    static func lesson(_ id: String, in connection: PostgresConnection) async throws -> Lesson? {
        let rows = try await connection.query("SELECT doc::text AS doc FROM learning_lessons WHERE id = $1", [id])
        guard let row = rows.first else { return nil }
        return try? ContractCoding.decode(Lesson.self, from: Array(try row.decode(String.self, "doc").utf8))
    }

    static func setGoal(user: String, _ goal: LearningGoalRequest, at: Date, in connection: PostgresConnection) async throws {
        _ = try await connection.execute("""
            INSERT INTO learning_profiles (user_id, knowledge_base_id, path_id, tz_offset_minutes, updated_at)
            VALUES ($1, $2, $3, COALESCE($4::integer, 0), $5)
            ON CONFLICT (user_id) DO UPDATE SET knowledge_base_id = EXCLUDED.knowledge_base_id, path_id = EXCLUDED.path_id,
                tz_offset_minutes = COALESCE($4::integer, learning_profiles.tz_offset_minutes), updated_at = EXCLUDED.updated_at
            """, [user, goal.knowledgeBaseId, goal.pathId, goal.clientTimezoneOffsetMinutes, at])
    }

    /// The user's offset: the one given (remembered on the profile), else the profile's, else
    /// that of their latest reading event (the live reading figures, `public.`: a rebuild's
    /// shadow holds only the learning tables), else UTC.
    static func offset(user: String, given: Int?, at: Date, in connection: PostgresConnection) async throws -> Int {
        if let given {
            _ = try await connection.execute("""
                INSERT INTO learning_profiles (user_id, tz_offset_minutes, updated_at) VALUES ($1, $2, $3)
                ON CONFLICT (user_id) DO UPDATE SET tz_offset_minutes = EXCLUDED.tz_offset_minutes,
                    updated_at = GREATEST(learning_profiles.updated_at, EXCLUDED.updated_at)
                """, [user, given, at])
            return given
        }
        let rows = try await connection.query("""
            SELECT COALESCE((SELECT tz_offset_minutes FROM learning_profiles WHERE user_id = $1),
                            (SELECT tz_offset_minutes FROM public.analytics_users WHERE user_id = $1), 0) AS offset_minutes
            """, [user])
        return try rows.first?.decode(Int.self, "offset_minutes") ?? 0
    }

    /// The SM-2 state of the user's latest review task of `lesson`, if any.
    static func latestState(user: String, lesson: String, in connection: PostgresConnection) async throws -> ReviewScheduler.State? {
        let rows = try await connection.query("""
            SELECT repetition, interval_days, ease_factor FROM learning_review_tasks WHERE user_id = $1 AND lesson_id = $2
            ORDER BY scheduled_at DESC, id DESC LIMIT 1
            """, [user, lesson])
        guard let row = rows.first else { return nil }
        return .init(repetition: try row.decode(Int.self, "repetition"), intervalDays: try row.decode(Int.self, "interval_days"),
                     easeFactor: try row.decode(Double.self, "ease_factor"))
    }

    static func insertTask(id: String, user: String, lesson: String, source: String, day: LocalDay, at: Date,
                           state: ReviewScheduler.State, score: Int, in connection: PostgresConnection) async throws {
        _ = try await connection.execute("""
            INSERT INTO learning_review_tasks (id, user_id, lesson_id, source_session_id, review_type, scheduled_at, scheduled_day,
                                               status, repetition, interval_days, ease_factor, mastery_score)
            VALUES ($1, $2, $3, $4, 'recall', $5, $6::date, 'pending', $7, $8, $9, $10)
            ON CONFLICT (id) DO NOTHING
            """, [id, user, lesson, source, at, day.description, state.repetition, state.intervalDays, state.easeFactor, score])
    }

    static func day(_ day: LocalDay, plus days: Int) -> LocalDay { LocalDay(number: day.number + days) }

    /// The instant the local `day` starts for a user `offsetMinutes` east of UTC.
    static func midnight(of day: LocalDay, offsetMinutes: Int) -> Date {
        Date(timeIntervalSince1970: Double(day.number * 86_400 - offsetMinutes * 60))
    }
}
