import Contracts
import Foundation
import Postgres
import Synchronization

/// The `materials` table with a short-lived in-process cache of lookups (including
/// misses), so a batch costs at most one query for the materials it names. A change made
/// through this process is visible at once; one made elsewhere within the cache TTL.
public final class MaterialCatalog: Sendable {
    private struct Cached: Sendable {
        var entry: MaterialResponse?
        var fetchedAt: ContinuousClock.Instant
    }

    private let database: PostgresClient
    private let ttl: Duration
    private let cache = Mutex<[String: Cached]>([:])
    private static let maxCachedEntries = 100_000

    public init(database: PostgresClient, ttl: Duration) {
        self.database = database
        self.ttl = ttl
    }

    static let columns = "material_id, reading_target_type, knowledge_base_id, owner_user_id, expires_at, deleted, updated_at"

    /// The entries for `ids` (absent ids are unknown materials).
    public func lookup(_ ids: Set<String>) async throws(PostgresError) -> [String: MaterialResponse] {
        let now = ContinuousClock.now
        var found: [String: MaterialResponse] = [:]
        var missing: [String] = []
        cache.withLock { cache in
            for id in ids {
                if let cached = cache[id], now - cached.fetchedAt < ttl {
                    if let entry = cached.entry { found[id] = entry }
                } else {
                    missing.append(id)
                }
            }
        }
        guard !missing.isEmpty else { return found }
        let rows = try await database.query("SELECT \(Self.columns) FROM materials WHERE material_id = ANY($1::text[])", [missing])
        var fetched: [String: MaterialResponse] = [:]
        for row in rows {
            let entry = try Self.entry(row)
            fetched[entry.materialId] = entry
        }
        cache.withLock { cache in
            if cache.count > Self.maxCachedEntries { cache.removeAll(keepingCapacity: true) }
            for id in missing { cache[id] = Cached(entry: fetched[id], fetchedAt: now) }
        }
        found.merge(fetched) { _, new in new }
        return found
    }

    /// Inserts or replaces a material (un-deleting it).
    public func upsert(id: String, _ request: MaterialUpsertRequest) async throws(PostgresError) -> MaterialResponse {
        let rows = try await database.query("""
            INSERT INTO materials (material_id, reading_target_type, knowledge_base_id, owner_user_id, expires_at, deleted, updated_at)
            VALUES ($1, $2, $3, $4, $5, false, now())
            ON CONFLICT (material_id) DO UPDATE SET reading_target_type = EXCLUDED.reading_target_type,
                knowledge_base_id = EXCLUDED.knowledge_base_id, owner_user_id = EXCLUDED.owner_user_id,
                expires_at = EXCLUDED.expires_at, deleted = false, updated_at = now()
            RETURNING \(Self.columns)
            """, [id, request.readingTargetType.rawValue, request.knowledgeBaseId, request.ownerUserId, request.expiresAt])
        guard let row = rows.first else { throw PostgresError(code: .queryFailed, message: "upsert returned no row") }
        let entry = try Self.entry(row)
        remember(entry)
        return entry
    }

    /// Marks a material deleted; `nil` when there is no such material.
    public func markDeleted(id: String) async throws(PostgresError) -> MaterialResponse? {
        let rows = try await database.query(
            "UPDATE materials SET deleted = true, updated_at = now() WHERE material_id = $1 RETURNING \(Self.columns)", [id])
        guard let row = rows.first else { return nil }
        let entry = try Self.entry(row)
        remember(entry)
        return entry
    }

    private func remember(_ entry: MaterialResponse) {
        let now = ContinuousClock.now
        cache.withLock { $0[entry.materialId] = Cached(entry: entry, fetchedAt: now) }
    }

    private static func entry(_ row: PostgresRow) throws(PostgresError) -> MaterialResponse {
        let typeText = try row.decode(String.self, "reading_target_type")
        return MaterialResponse(
            materialId: try row.decode(String.self, "material_id"),
            readingTargetType: ReadingTargetType(rawValue: typeText) ?? .knowledgeSource,
            knowledgeBaseId: try row.decode(String?.self, "knowledge_base_id"),
            ownerUserId: try row.decode(String?.self, "owner_user_id"),
            expiresAt: try row.decode(Date?.self, "expires_at"),
            deleted: try row.decode(Bool.self, "deleted"),
            updatedAt: try row.decode(Date.self, "updated_at"))
    }
}
