import Contracts
import Foundation
import Lifecycle
import Postgres
import Projection
import ServiceLogging
import UserErasure

/// `account_deletions`, `account_deletion_services` and `account_deletion_outbox`: the
/// requests of `POST /account/deletion`, their progress through the services, and the
/// `user.deletions.v1` records due and not yet acknowledged by the broker.
///
/// A request names its user by `user_hash` (hex SHA-256 of the id); `user_id` is kept only
/// until ingest's own erasure, which clears it, so the receipt holds nothing else of them.
public struct AccountDeletionStore: Sendable {
    let database: PostgresClient

    public init(database: PostgresClient) {
        self.database = database
    }

    struct Request: Sendable {
        var requestID: String
        var status: AccountDeletionResponse.Status
        var requestedAt: Date
        var purgeAt: Date
        var completedAt: Date?

        init(row: PostgresRow) throws {
            requestID = try row.decode(String.self, "request_id")
            status = AccountDeletionResponse.Status(rawValue: try row.decode(String.self, "status")) ?? .scheduled
            requestedAt = try row.decode(Date.self, "requested_at")
            purgeAt = try row.decode(Date.self, "purge_at")
            completedAt = try row.decode(Date?.self, "completed_at")
        }
    }

    static let columns = "request_id, status, requested_at, purge_at, completed_at"

    /// The user's open request (scheduled or purging), or a new one due after `grace`.
    func schedule(userID: String, now: Date, grace: Duration) async throws -> Request {
        let hash = ErasedUsers.hash(userID)
        let purgeAt = now.addingTimeInterval(grace.timeInterval)
        let rows = try await database.query("""
            INSERT INTO account_deletions (request_id, user_hash, user_id, status, requested_at, purge_at)
            VALUES ($1, $2, $3, 'scheduled', $4, $5)
            ON CONFLICT (user_hash) WHERE status IN ('scheduled', 'purging') DO NOTHING
            RETURNING \(Self.columns)
            """, [UUID().uuidString.lowercased(), hash, userID, now, purgeAt])
        if let row = rows.first { return try Request(row: row) }
        guard let open = try await latest(userHash: hash), open.status == .scheduled || open.status == .purging else {
            throw PostgresError(code: .queryFailed, sqlState: "40001", message: "the open deletion request changed meanwhile")
        }
        return open
    }

    /// The user's latest request.
    func latest(userHash: String) async throws -> Request? {
        try await database.query("""
            SELECT \(Self.columns) FROM account_deletions WHERE user_hash = $1 ORDER BY requested_at DESC LIMIT 1
            """, [userHash]).first.map(Request.init(row:))
    }

    /// Each service's state of a request, by service name.
    func services(of requestID: String) async throws -> [AccountDeletionResponse.ServiceState] {
        try await database.query("""
            SELECT service, erased_at FROM account_deletion_services WHERE request_id = $1 ORDER BY service
            """, [requestID]).map { row in
            let erasedAt = try row.decode(Date?.self, "erased_at")
            return AccountDeletionResponse.ServiceState(service: try row.decode(String.self, "service"),
                                                        state: erasedAt == nil ? .pending : .erased, erasedAt: erasedAt)
        }
    }

    enum Cancellation { case cancelled(String), started, none }

    /// Cancels the user's scheduled request (the row goes: nothing of it remains).
    func cancel(userID: String) async throws -> Cancellation {
        let hash = ErasedUsers.hash(userID)
        let rows = try await database.query("""
            DELETE FROM account_deletions WHERE user_hash = $1 AND status = 'scheduled' RETURNING request_id
            """, [hash])
        if let row = rows.first { return .cancelled(try row.decode(String.self, "request_id")) }
        return try await latest(userHash: hash)?.status == .purging ? .started : .none
    }

    /// The hashes of users with an open request (uploads refused).
    func openHashes() async throws -> [String] {
        try await database.query("SELECT user_hash FROM account_deletions WHERE status IN ('scheduled', 'purging')")
            .map { try $0.decode(String.self, "user_hash") }
    }

    /// Moves due requests to `purging`: one pending row per service and the
    /// `user.deletions.v1` record in the outbox, in one transaction; returns how many.
    func startDue(now: Date, services: [String], limit: Int = 100) async throws -> Int {
        try await database.withTransaction { connection in
            let due = try await connection.query("""
                SELECT request_id, user_id, requested_at, purge_at FROM account_deletions
                WHERE status = 'scheduled' AND purge_at <= $1 AND user_id IS NOT NULL
                ORDER BY purge_at LIMIT $2::bigint FOR UPDATE SKIP LOCKED
                """, [now, Int64(limit)])
            guard !due.isEmpty else { return 0 }
            var ids: [String] = [], users: [String] = [], values: [String] = []
            for row in due {
                let record = UserDeletionRecord(requestId: try row.decode(String.self, "request_id"),
                                                userId: try row.decode(String.self, "user_id"),
                                                requestedAt: try row.decode(Date.self, "requested_at"),
                                                purgeAt: try row.decode(Date.self, "purge_at"))
                ids.append(record.requestId)
                users.append(record.userId)
                values.append(String(decoding: try ContractCoding.encode(record), as: UTF8.self))
            }
            _ = try await connection.execute("""
                UPDATE account_deletions SET status = 'purging', published_at = $2 WHERE request_id = ANY($1::text[])
                """, [ids, now])
            _ = try await connection.execute("""
                INSERT INTO account_deletion_services (request_id, service)
                SELECT r, s FROM unnest($1::text[]) AS r, unnest($2::text[]) AS s ON CONFLICT DO NOTHING
                """, [ids, services])
            _ = try await connection.execute("""
                INSERT INTO account_deletion_outbox (user_id, value) SELECT * FROM unnest($1::text[], $2::text[])
                """, [users, values])
            return ids.count
        }
    }
}
