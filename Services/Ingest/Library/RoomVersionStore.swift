import Contracts
import Foundation
import Postgres

/// `rooms`, `room_versions` and `room_upload_usage`: one reservation transaction per new
/// version (room upsert by its owner, quota, a `pending` version row), then `queued` once
/// Kafka acknowledged the transcode request, or the reservation undone if it did not.
public struct RoomVersionStore: Sendable {
    public enum Reservation: Sendable, Equatable {
        /// A new `pending` version; produce its transcode request.
        case reserved
        /// The version exists: its room, owner and status.
        case existing(roomID: String, ownerUserID: String, status: String)
        /// The room belongs to another user.
        case roomOwnedByAnotherUser
        /// The user's monthly bytes would go over the quota.
        case quotaExceeded(usedBytes: Int64)
    }

    private struct Rollback: Error {
        let reservation: Reservation
    }

    let database: PostgresClient

    public init(database: PostgresClient) { self.database = database }

    /// The room, created or updated by its owner: `$1` room, `$2` owner, `$3` visibility,
    /// `$4` title, `$5` tags. No row when another user owns it.
    static let upsertRoomSQL = """
        INSERT INTO rooms (room_id, owner_user_id, visibility, title, tags) VALUES ($1, $2, $3, $4, $5::text[])
        ON CONFLICT (room_id) DO UPDATE SET visibility = EXCLUDED.visibility, title = EXCLUDED.title,
            tags = EXCLUDED.tags, updated_at = now()
        WHERE rooms.owner_user_id = EXCLUDED.owner_user_id
        RETURNING room_id
        """

    /// Adds `$3` bytes to `$1`'s month `$2` unless that passes the quota `$4`; no row then.
    static let reserveBytesSQL = """
        INSERT INTO room_upload_usage (user_id, month, bytes) SELECT $1, $2::date, $3::bigint WHERE $3::bigint <= $4::bigint
        ON CONFLICT (user_id, month) DO UPDATE SET bytes = room_upload_usage.bytes + EXCLUDED.bytes
        WHERE room_upload_usage.bytes + EXCLUDED.bytes <= $4::bigint
        RETURNING bytes
        """

    static let usedBytesSQL = "SELECT bytes FROM room_upload_usage WHERE user_id = $1 AND month = $2::date"

    /// Deletes the version if it is still `$2` and gives its bytes back; false when it was not.
    @discardableResult
    static func forget(_ versionID: String, status: String, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query("""
            DELETE FROM room_versions WHERE version_id = $1 AND status = $2
            RETURNING owner_user_id, quota_month::text AS month, usdz_bytes + roomplan_json_bytes AS bytes
            """, [versionID, status])
        guard let row = rows.first else { return false }
        try await connection.execute(
            "UPDATE room_upload_usage SET bytes = greatest(0, bytes - $3::bigint) WHERE user_id = $1 AND month = $2::date",
            [try row.decode(String.self, "owner_user_id"), try row.decode(String.self, "month"), try row.decode(Int64.self, "bytes")])
        return true
    }

    /// The first day of `date`'s UTC month, as `YYYY-MM-01`.
    public static func quotaMonth(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month], from: date)
        return String(format: "%04d-%02d-01", c.year ?? 1970, c.month ?? 1)
    }

    public func reserve(_ request: RoomVersionCompleteRequest, ownerUserID: String, quotaBytes: Int64,
                        now: Date) async throws -> Reservation {
        let bytes = request.source.usdzBytes + request.source.roomplanJsonBytes
        let month = Self.quotaMonth(now)
        do {
            return try await database.withTransaction { connection in
                if let existing = try await Self.existing(request.versionId, on: connection) { return existing }
                let room = try await connection.query(Self.upsertRoomSQL, [request.roomId, ownerUserID, request.visibility.rawValue, request.title, request.tags])
                guard !room.isEmpty else { throw Rollback(reservation: .roomOwnedByAnotherUser) }
                let usage = try await connection.query(Self.reserveBytesSQL, [ownerUserID, month, bytes, quotaBytes])
                guard !usage.isEmpty else {
                    let used = try await connection.query(Self.usedBytesSQL, [ownerUserID, month])
                    throw Rollback(reservation: .quotaExceeded(usedBytes: try used.first?.decode(Int64.self, "bytes") ?? 0))
                }
                let redactions = try PostgresJSON(encoding: request.redactions, encoder: ContractCoding.encoder)
                let inserted = try await connection.query("""
                    INSERT INTO room_versions (version_id, room_id, owner_user_id, status, usdz_key, usdz_bytes,
                        roomplan_json_key, roomplan_json_bytes, sha256, redactions, quota_month)
                    VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $8, $9::jsonb, $10::date)
                    ON CONFLICT (version_id) DO NOTHING RETURNING version_id
                    """, [request.versionId, request.roomId, ownerUserID, request.source.usdzKey, request.source.usdzBytes,
                          request.source.roomplanJsonKey, request.source.roomplanJsonBytes, request.source.sha256,
                          redactions, month])
                if inserted.isEmpty {
                    // A concurrent request created it first: undo ours and answer like a repeat.
                    throw Rollback(reservation: .existing(roomID: request.roomId, ownerUserID: ownerUserID, status: "pending"))
                }
                return .reserved
            }
        } catch let rollback as Rollback {
            if case .existing = rollback.reservation,
               let existing = try await database.withConnection({ try await Self.existing(request.versionId, on: $0) }) {
                return existing
            }
            return rollback.reservation
        }
    }

    private static func existing(_ versionID: String, on connection: PostgresConnection) async throws -> Reservation? {
        let rows = try await connection.query(
            "SELECT room_id, owner_user_id, status FROM room_versions WHERE version_id = $1", [versionID])
        guard let row = rows.first else { return nil }
        return .existing(roomID: try row.decode(String.self, "room_id"), ownerUserID: try row.decode(String.self, "owner_user_id"),
                         status: try row.decode(String.self, "status"))
    }

    /// Kafka acknowledged the transcode request.
    public func markQueued(_ versionID: String) async throws {
        try await database.execute(
            "UPDATE room_versions SET status = 'queued', updated_at = now() WHERE version_id = $1 AND status = 'pending'",
            [versionID])
    }

    /// Kafka did not take the request: forget the pending version and give the bytes back.
    public func release(_ versionID: String) async throws {
        _ = try await database.withTransaction { connection in
            try await Self.forget(versionID, status: "pending", on: connection)
        }
    }
}
