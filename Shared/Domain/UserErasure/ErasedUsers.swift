import Auth
import Foundation
import Postgres

/// One service's list of erased accounts (`erased_users`, rows of `service`), as its
/// projections and its token check read it. Users are listed by the hex SHA-256 of their id
/// (`hash`), so the list holds nothing personal beyond that.
///
/// Projections ask `erased(among:in:)` inside their batch transaction and leave those users
/// out, so a replay, `backbone rebuild` or an offset reset cannot bring an erased user back.
/// The question first takes this service's erasure fence in shared mode, and an erasure takes
/// it exclusively (`fence(in:)`): a batch that raced an erasure either committed before the
/// erasure's deletes ran (and is deleted with the rest) or sees the user listed.
public struct ErasedUsers: Sendable {
    public let service: String

    public init(service: String) {
        self.service = service
    }

    /// The hex SHA-256 of a user id: how erased users and receipts name them.
    public static func hash(_ userID: String) -> String { RevokedSubjects.hash(userID) }

    /// The advisory lock of this service's erasures (FNV-1a of the service name).
    var lockKey: Int64 { AdvisoryLockKey.named("user-erasure:" + service) }

    /// Of `userIDs`, those this service erased; waits for an erasure of this service that is
    /// running. Schema-qualified (`public.erased_users`) so that a rebuild's shadow schema on
    /// the search path still sees the live list.
    public func erased<S: Sequence>(among userIDs: S, in connection: PostgresConnection) async throws -> Set<String>
        where S.Element == String {
        var byHash: [String: String] = [:]
        for user in userIDs { byHash[Self.hash(user)] = user }
        guard !byHash.isEmpty else { return [] }
        _ = try await connection.queryPrepared("SELECT pg_advisory_xact_lock_shared($1::bigint)", [lockKey])
        let rows = try await connection.queryPrepared("""
            SELECT user_hash FROM public.erased_users WHERE service = $1 AND user_hash = ANY($2::text[])
            """, [service, Array(byHash.keys)])
        var erased = Set<String>()
        for row in rows { if let user = byHash[try row.decode(String.self, "user_hash")] { erased.insert(user) } }
        return erased
    }

    /// Takes this service's erasure fence exclusively (until the transaction ends).
    func fence(in connection: PostgresConnection) async throws {
        _ = try await connection.query("SELECT pg_advisory_xact_lock($1::bigint)", [lockKey])
    }

    /// Whether the user is listed (inside the erasure's transaction).
    func isListed(_ userHash: String, in connection: PostgresConnection) async throws -> Bool {
        try await !connection.query("SELECT 1 FROM public.erased_users WHERE service = $1 AND user_hash = $2",
                                    [service, userHash]).isEmpty
    }

    /// The hashes listed since `since` (every one when nil), for the token check.
    func listed(since: Date?, client: PostgresClient) async throws -> (hashes: [String], latest: Date?) {
        let rows = try await client.query("""
            SELECT user_hash, erased_at FROM public.erased_users
            WHERE service = $1 AND ($2::timestamptz IS NULL OR erased_at >= $2) ORDER BY erased_at
            """, [service, since])
        var hashes: [String] = []
        var latest = since
        for row in rows {
            hashes.append(try row.decode(String.self, "user_hash"))
            latest = try row.decode(Date.self, "erased_at")
        }
        return (hashes, latest)
    }
}
