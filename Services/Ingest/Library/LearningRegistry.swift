import Foundation
import Postgres

/// What the write edge itself accepted of the learning app, so that it can refuse a write that
/// names something it never took (404 `NOT_FOUND`, nothing produced) without reading the
/// aggregator's tables: the knowledge bases and paths of the catalog `PUT`s (lessons are in
/// `materials`), and each session id with the user who sent it.
///
/// - A goal must name a knowledge base and one of its paths.
/// - A review id (`rv-{sessionId}` or `rv-{sessionId}-{n}`, as the aggregator names reviews)
///   must come from a session of the same user: someone else's review is as unknown as a
///   made-up one. `rv-{s}-{n}` exists only once the review before it (`rv-{s}` for n = 1,
///   `rv-{s}-{n-1}` after) was completed here: the aggregator schedules the n-th when the
///   (n−1)-th is completed, so a number further on is refused too.
/// - A session id belongs to the first user who sent it: another user's reuse is 409
///   `SESSION_ID_TAKEN`.
/// - Feedback may name only a known lesson and a session of the user.
///
/// Catalog rows are written after the broker acknowledged their record; a session is claimed
/// (one statement that also says who holds the id) just before its record is produced, and the
/// claim is withdrawn when the broker refuses it, so a refused or failed write leaves nothing.
/// Account deletion erases the user's sessions here.
struct LearningRegistry: Sendable {
    let database: PostgresClient

    enum Kind: String {
        case knowledgeBase = "knowledge_base"
        case path
    }

    /// Remembers a catalog entry (its knowledge base for a path), moving only to a higher version.
    func register(_ kind: Kind, id: String, knowledgeBaseId: String?, version: Int) async throws {
        _ = try await database.execute("""
            INSERT INTO ingest_learning_catalog (kind, id, knowledge_base_id, version) VALUES ($1, $2, $3, $4)
            ON CONFLICT (kind, id) DO UPDATE SET knowledge_base_id = EXCLUDED.knowledge_base_id, version = EXCLUDED.version
            WHERE ingest_learning_catalog.version < EXCLUDED.version
            """, [kind.rawValue, id, knowledgeBaseId, version])
    }

    /// Whether a path of `knowledgeBaseId` with id `pathId` was accepted, and the base itself.
    func knows(knowledgeBaseId: String, pathId: String) async throws -> (base: Bool, path: Bool) {
        let rows = try await database.query("""
            SELECT kind, knowledge_base_id FROM ingest_learning_catalog
            WHERE (kind = 'knowledge_base' AND id = $1) OR (kind = 'path' AND id = $2)
            """, [knowledgeBaseId, pathId])
        var base = false, path = false
        for row in rows {
            switch try row.decode(String.self, "kind") {
            case Kind.knowledgeBase.rawValue: base = true
            default: path = (try row.decode(String?.self, "knowledge_base_id")) == knowledgeBaseId
            }
        }
        return (base, path)
    }

    /// The user who sent session `id` first, if any.
    func owner(ofSession id: String) async throws -> String? {
        try await database.query("SELECT user_id FROM ingest_learning_sessions WHERE session_id = $1", [id])
            .first?.decode(String.self, "user_id")
    }

    /// Claims session `id` for `user` in one statement: the user who holds it (the first sender)
    /// and whether this call inserted the claim (to withdraw it when the broker refuses the record).
    func claim(session id: String, user: String) async throws -> (owner: String, inserted: Bool) {
        let rows = try await database.query("""
            INSERT INTO ingest_learning_sessions (session_id, user_id) VALUES ($1, $2)
            ON CONFLICT (session_id) DO UPDATE SET session_id = EXCLUDED.session_id
            RETURNING user_id, (xmax = 0) AS inserted
            """, [id, user])
        guard let row = rows.first else { return (user, false) }
        return (try row.decode(String.self, "user_id"), try row.decode(Bool.self, "inserted"))
    }

    /// Withdraws a claim this request made for a record the broker did not take.
    func withdraw(session id: String, user: String) async {
        _ = try? await database.execute("DELETE FROM ingest_learning_sessions WHERE session_id = $1 AND user_id = $2", [id, user])
    }

    /// Whether review `id` is one the aggregator scheduled for `user`: the review of a session
    /// she sent, or the next one after a review of it she completed.
    func ownsReview(_ id: String, user: String) async throws -> Bool {
        let readings = Self.readings(ofReview: id)
        guard !readings.isEmpty else { return false }
        return try await !database.query("""
            SELECT 1 FROM unnest($1::text[], $2::text[]) AS r(session_id, previous)
            JOIN ingest_learning_sessions s ON s.session_id = r.session_id AND s.user_id = $3
            WHERE r.previous = '' OR EXISTS (SELECT 1 FROM ingest_learning_review_completions c
                                            WHERE c.review_id = r.previous AND c.user_id = $3)
            LIMIT 1
            """, [readings.map(\.session), readings.map { $0.previous ?? "" }, user]).isEmpty
    }

    /// Remembers a completion the broker took (the review after it may now be completed).
    func completed(review id: String, user: String) async throws {
        _ = try await database.execute("""
            INSERT INTO ingest_learning_review_completions (review_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING
            """, [id, user])
    }

    /// The session ids review `id` may come from (`sessions(ofReview:)`), each with the review
    /// that must have been completed before it: none for `rv-{s}`, `rv-{s}` for `rv-{s}-1`,
    /// `rv-{s}-{n-1}` for `rv-{s}-{n}`.
    static func readings(ofReview id: String) -> [(session: String, previous: String?)] {
        sessions(ofReview: id).compactMap { session in
            if "rv-\(session)" == id { return (session, nil) }
            // The aggregator's numbers: 1, 2, … as written (no sign, no leading zero).
            let suffix = id.dropFirst("rv-\(session)-".count)
            guard let n = Int(suffix), n >= 1, String(n) == suffix else { return nil }
            return (session, n == 1 ? "rv-\(session)" : "rv-\(session)-\(n - 1)")
        }
    }

    /// The session ids review `id` may come from: `rv-{s}` is the review of session `s`;
    /// `rv-{s}-{n}` the n-th after it, unless `s-{n}` is itself the session's id.
    static func sessions(ofReview id: String) -> [String] {
        guard id.hasPrefix("rv-") else { return [] }
        let rest = String(id.dropFirst(3))
        guard !rest.isEmpty else { return [] }
        var candidates = [rest]
        if let dash = rest.lastIndex(of: "-"), dash > rest.startIndex {
            let suffix = rest[rest.index(after: dash)...]
            if !suffix.isEmpty, suffix.allSatisfy(\.isASCII), suffix.allSatisfy(\.isNumber) {
                candidates.append(String(rest[..<dash]))
            }
        }
        return candidates
    }

    static let erasure = ["DELETE FROM ingest_learning_sessions WHERE user_id = $1",
                          "DELETE FROM ingest_learning_review_completions WHERE user_id = $1"]

    static let migrations: [PostgresMigration] = [
        PostgresMigration(version: 180, name: "ingest_learning_registry", sql: """
            -- The catalog's knowledge bases and paths and the learners' session ids the write edge accepted
            CREATE TABLE IF NOT EXISTS ingest_learning_catalog (
                kind               text    NOT NULL,
                id                 text    NOT NULL,
                knowledge_base_id  text,
                version            integer NOT NULL,
                PRIMARY KEY (kind, id)
            );
            CREATE TABLE IF NOT EXISTS ingest_learning_sessions (
                session_id   text        PRIMARY KEY,
                user_id      text        NOT NULL,
                accepted_at  timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX IF NOT EXISTS ingest_learning_sessions_user ON ingest_learning_sessions (user_id);
            """),
        PostgresMigration(version: 181, name: "ingest_learning_review_completions", sql: """
            -- The review completions the write edge accepted: the review after each may be completed next
            CREATE TABLE IF NOT EXISTS ingest_learning_review_completions (
                review_id    text        PRIMARY KEY,
                user_id      text        NOT NULL,
                accepted_at  timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX IF NOT EXISTS ingest_learning_review_completions_user ON ingest_learning_review_completions (user_id);
            """),
    ]
}
