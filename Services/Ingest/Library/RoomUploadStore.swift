import Contracts
import Foundation
import Kafka
import Postgres
import Projection
import ServiceLogging

/// The `uploading` half of `room_versions`: upload-init reserves the quota and records the
/// minted keys; upload-complete promotes the row to `pending`; the sweep abandons rows whose
/// upload time passed and gives their bytes back. Upload-init and the sweep each announce
/// what they did on `room.uploads.v1` (the room catalog's "my rooms" shows `uploading`
/// versions): a `RoomUploadEvent` in `room_upload_outbox`, in the same transaction.
public struct RoomUploadStore: Sendable {
    /// A version between upload-init and upload-complete (or after).
    public struct Upload: Sendable, Equatable {
        public var versionID: String
        public var roomID: String
        public var ownerUserID: String
        public var status: String
        public var usdzKey: String
        public var usdzBytes: Int64
        public var roomplanJsonKey: String
        /// The declared size; with `roomplanJsonSizeOpen`, the most reserved for it.
        public var roomplanJsonBytes: Int64
        public var usdzUploadID: String?
        /// upload-init was not told the size of `roomplan.json` (completion finds it).
        public var roomplanJsonSizeOpen = false
        /// The room's city-level label given at upload-init.
        public var locationCity: String?

        /// Whether `size` is what the store may hold for `roomplan.json`.
        public func acceptsRoomplanJson(size: Int64) -> Bool {
            roomplanJsonSizeOpen ? (1...roomplanJsonBytes).contains(size) : size == roomplanJsonBytes
        }
    }

    public enum Reservation: Sendable, Equatable {
        case reserved
        case roomOwnedByAnotherUser
        case quotaExceeded(usedBytes: Int64)
        /// A concurrent upload-init with the same idempotency key reserved first.
        case idempotencyKeyTaken
    }

    /// upload-init's idempotency key, the request it came with (canonical JSON), and until when
    /// a repeat answers the same version.
    public struct Idempotency: Sendable, Equatable {
        public var key: String
        public var request: String
        public var expiresAt: Date
    }

    private struct Rollback: Error { let reservation: Reservation }

    let database: PostgresClient

    public init(database: PostgresClient) { self.database = database }

    /// Bytes the user used (or reserved) in `now`'s UTC month.
    public func usedBytes(_ userID: String, now: Date) async throws -> Int64 {
        let rows = try await database.query(RoomVersionStore.usedBytesSQL, [userID, RoomVersionStore.quotaMonth(now)])
        return try rows.first?.decode(Int64.self, "bytes") ?? 0
    }

    /// One transaction: the room (created, or updated by its owner), the quota, the `uploading` row.
    public func reserve(_ upload: Upload, request: RoomUploadInitRequest, quotaBytes: Int64, expiresAt: Date,
                        idempotency: Idempotency? = nil, now: Date) async throws -> Reservation {
        let month = RoomVersionStore.quotaMonth(now)
        do {
            return try await database.withTransaction { connection in
                if let idempotency {
                    // A key past its time is free again.
                    try await connection.execute("""
                        UPDATE room_versions SET idempotency_key = NULL, idempotency_request = NULL, idempotency_expires_at = NULL
                        WHERE owner_user_id = $1 AND idempotency_key = $2 AND idempotency_expires_at <= $3
                        """, [upload.ownerUserID, idempotency.key, now])
                }
                let room = try await connection.query(RoomVersionStore.upsertRoomSQL, [upload.roomID, upload.ownerUserID, request.visibility.rawValue, request.title, request.tags])
                guard !room.isEmpty else { throw Rollback(reservation: .roomOwnedByAnotherUser) }
                let bytes = upload.usdzBytes + upload.roomplanJsonBytes
                let usage = try await connection.query(RoomVersionStore.reserveBytesSQL, [upload.ownerUserID, month, bytes, quotaBytes])
                guard !usage.isEmpty else {
                    let used = try await connection.query(RoomVersionStore.usedBytesSQL, [upload.ownerUserID, month])
                    throw Rollback(reservation: .quotaExceeded(usedBytes: try used.first?.decode(Int64.self, "bytes") ?? 0))
                }
                let redactions = try PostgresJSON(encoding: request.redactions ?? [], encoder: ContractCoding.encoder)
                try await connection.execute("""
                    INSERT INTO room_versions (version_id, room_id, owner_user_id, status, usdz_key, usdz_bytes,
                        roomplan_json_key, roomplan_json_bytes, quota_month, usdz_upload_id, upload_expires_at,
                        idempotency_key, idempotency_request, idempotency_expires_at, redactions, roomplan_json_size_open,
                        location_city)
                    VALUES ($1, $2, $3, 'uploading', $4, $5, $6, $7, $8::date, $9, $10, $11, $12, $13, $14::jsonb, $15, $16)
                    """, [upload.versionID, upload.roomID, upload.ownerUserID, upload.usdzKey, upload.usdzBytes,
                          upload.roomplanJsonKey, upload.roomplanJsonBytes, month, upload.usdzUploadID, expiresAt,
                          idempotency?.key, idempotency?.request, idempotency?.expiresAt, redactions,
                          upload.roomplanJsonSizeOpen, upload.locationCity])
                try await Self.announce(RoomUploadEvent(
                    roomId: upload.roomID, versionId: upload.versionID, ownerUserId: upload.ownerUserID, status: .uploading,
                    title: request.title, tags: request.tags, visibility: request.visibility, locationCity: upload.locationCity,
                    expiresAt: expiresAt, at: now),
                    on: connection)
                return .reserved
            }
        } catch let rollback as Rollback {
            return rollback.reservation
        } catch let error as PostgresError where error.sqlState == "23505" && idempotency != nil {
            return .idempotencyKeyTaken
        }
    }

    /// The version `ownerUserID` reserved with idempotency key `key` (still before its time at
    /// `now`), and the request it came with.
    public func upload(ownerUserID: String, idempotencyKey key: String, now: Date) async throws -> (upload: Upload, request: String)? {
        let rows = try await database.query("""
            SELECT \(Self.columns()), idempotency_request FROM room_versions
            WHERE owner_user_id = $1 AND idempotency_key = $2 AND idempotency_expires_at > $3
            """, [ownerUserID, key, now])
        guard let row = rows.first else { return nil }
        return (try Self.decode(row), try row.decode(String.self, "idempotency_request"))
    }

    public func upload(_ versionID: String) async throws -> Upload? {
        let rows = try await database.query("""
            SELECT \(Self.columns()) FROM room_versions WHERE version_id = $1
            """, [versionID])
        return try rows.first.map(Self.decode)
    }

    /// What `decode` reads of a `room_versions` row (qualified with `table`, if given).
    private static func columns(of table: String? = nil) -> String {
        ["version_id", "room_id", "owner_user_id", "status", "usdz_key", "usdz_bytes", "roomplan_json_key", "roomplan_json_bytes",
         "usdz_upload_id", "roomplan_json_size_open", "location_city"].map { (table.map { "\($0)." } ?? "") + $0 }
            .joined(separator: ", ")
    }

    private static func decode(_ row: PostgresRow) throws -> Upload {
        Upload(versionID: try row.decode(String.self, "version_id"), roomID: try row.decode(String.self, "room_id"),
               ownerUserID: try row.decode(String.self, "owner_user_id"), status: try row.decode(String.self, "status"),
               usdzKey: try row.decode(String.self, "usdz_key"), usdzBytes: try row.decode(Int64.self, "usdz_bytes"),
               roomplanJsonKey: try row.decode(String.self, "roomplan_json_key"),
               roomplanJsonBytes: try row.decode(Int64.self, "roomplan_json_bytes"),
               usdzUploadID: try row.decode(String?.self, "usdz_upload_id"),
               roomplanJsonSizeOpen: try row.decode(Bool.self, "roomplan_json_size_open"),
               locationCity: try row.decode(String?.self, "location_city"))
    }

    /// The objects are in place: `uploading` → `pending` with the complete request's details.
    /// A `roomplan.json` upload-init did not size is now charged its real size (the rest of
    /// what was reserved for it given back). False when the row was not `uploading` any more
    /// (a concurrent complete, or the sweep).
    public func promote(_ request: RoomVersionCompleteRequest) async throws -> Bool {
        let redactions = try PostgresJSON(encoding: request.redactions, encoder: ContractCoding.encoder)
        return try await database.withTransaction { connection in
            let rows = try await connection.query("""
                UPDATE room_versions v SET status = 'pending', sha256 = $2, redactions = $3::jsonb, upload_expires_at = NULL,
                    roomplan_json_bytes = CASE WHEN v.roomplan_json_size_open THEN $4::bigint ELSE v.roomplan_json_bytes END,
                    roomplan_json_size_open = false, updated_at = now()
                FROM room_versions old
                WHERE v.version_id = $1 AND v.status = 'uploading' AND old.version_id = v.version_id
                RETURNING v.owner_user_id, v.quota_month::text AS month, old.roomplan_json_bytes - v.roomplan_json_bytes AS unused
                """, [request.versionId, request.source.sha256, redactions, request.source.roomplanJsonBytes])
            guard let row = rows.first else { return false }
            let unused = try row.decode(Int64.self, "unused")
            if unused > 0 {
                try await connection.execute(
                    "UPDATE room_upload_usage SET bytes = greatest(0, bytes - $3::bigint) WHERE user_id = $1 AND month = $2::date",
                    [try row.decode(String.self, "owner_user_id"), try row.decode(String.self, "month"), unused])
            }
            return true
        }
    }

    /// Versions still `uploading`, and versions `pending` since before `pendingBefore` (promoted,
    /// but Kafka never took their transcode request), oldest first, each with the upload-complete
    /// request its app would send: the room's title, tags and visibility, the minted keys and
    /// sizes, the redactions.
    public func uploading(pendingBefore: Date, limit: Int = 100) async throws -> [(upload: Upload, request: RoomVersionCompleteRequest)] {
        try await completeRequests(where: "v.status = 'uploading' OR (v.status = 'pending' AND v.updated_at < $2)",
                                   order: "v.upload_expires_at NULLS FIRST", [limit, pendingBefore])
    }

    /// Version `versionID` (any status) and the upload-complete request its app would send.
    public func completeRequest(_ versionID: String) async throws -> (upload: Upload, request: RoomVersionCompleteRequest)? {
        try await completeRequests(where: "v.version_id = $2", order: "v.version_id", [1, versionID]).first
    }

    private func completeRequests(where condition: String, order: String,
                                  _ bindings: [any PostgresBindable]) async throws -> [(upload: Upload, request: RoomVersionCompleteRequest)] {
        let rows = try await database.query("""
            SELECT \(Self.columns(of: "v")),
                v.redactions::text AS redactions, r.title, r.tags, r.visibility
            FROM room_versions v JOIN rooms r USING (room_id)
            WHERE \(condition) ORDER BY \(order) LIMIT $1
            """, bindings)
        return try rows.map { row in
            let upload = try Self.decode(row)
            let redactions = try ContractCoding.decoder.decode([Redaction].self, from: Data(try row.decode(String.self, "redactions").utf8))
            let request = RoomVersionCompleteRequest(
                roomId: upload.roomID, versionId: upload.versionID, title: try row.decode(String.self, "title"),
                tags: try row.decode([String].self, "tags"),
                visibility: RoomVisibility(rawValue: try row.decode(String.self, "visibility")) ?? .private,
                source: RoomSource(usdzKey: upload.usdzKey, usdzBytes: upload.usdzBytes, roomplanJsonKey: upload.roomplanJsonKey,
                                   roomplanJsonBytes: upload.roomplanJsonBytes),
                redactions: redactions, locationCity: upload.locationCity)
            return (upload, request)
        }
    }

    /// Versions still `uploading` after their time, oldest first.
    public func expired(now: Date, limit: Int = 100) async throws -> [Upload] {
        let rows = try await database.query("""
            SELECT \(Self.columns()) FROM room_versions
            WHERE status = 'uploading' AND upload_expires_at < $1 ORDER BY upload_expires_at LIMIT $2
            """, [now, limit])
        return try rows.map(Self.decode)
    }

    /// Forgets an abandoned upload and gives its bytes back (only if still `uploading`), and
    /// announces it.
    /// The store's multipart uploads behind the version's unfinished resumable (tus) uploads:
    /// what the sweep aborts before it abandons the version.
    public func unfinishedResumableUploads(of versionID: String) async throws -> [(key: String, storeUploadID: String)] {
        try await database.query("""
            SELECT object_key, store_upload_id FROM storage_resumable_uploads WHERE version_id = $1 AND NOT completed
            """, [versionID]).map { (try $0.decode(String.self, "object_key"), try $0.decode(String.self, "store_upload_id")) }
    }

    public func abandon(_ upload: Upload, now: Date = Date()) async throws {
        try await database.withTransaction { connection in
            guard try await RoomVersionStore.forget(upload.versionID, status: "uploading", on: connection) else { return }
            try await connection.execute("DELETE FROM storage_resumable_uploads WHERE version_id = $1", [upload.versionID])
            let room = try await connection.query("SELECT title, tags, visibility FROM rooms WHERE room_id = $1", [upload.roomID]).first
            try await Self.announce(RoomUploadEvent(
                roomId: upload.roomID, versionId: upload.versionID, ownerUserId: upload.ownerUserID, status: .abandoned,
                title: try room?.decode(String.self, "title") ?? "", tags: try room?.decode([String].self, "tags") ?? [],
                visibility: RoomVisibility(rawValue: try room?.decode(String.self, "visibility") ?? "") ?? .private, at: now),
                on: connection)
        }
    }

    /// The outbox the `room.uploads.v1` relay publishes from.
    public static let outboxTable = "room_upload_outbox"
    static let outboxLockKey: Int64 = 0x726f_6f6d_7570_6c64 // "roomupld"

    public static func outbox(database: PostgresClient, producer: any KafkaRecordSender, topic: String) -> KeyedRecordOutbox {
        KeyedRecordOutbox(database: database, producer: producer, table: outboxTable, topic: topic, lockKey: outboxLockKey,
                          traceColumn: "traceparent")
    }

    /// The event in the outbox, with the trace of the request (or sweep) that made it.
    private static func announce(_ event: RoomUploadEvent, on connection: PostgresConnection) async throws {
        try await connection.execute("INSERT INTO \(outboxTable) (room_id, value, traceparent) VALUES ($1, $2, $3)",
                                     [event.roomId, String(decoding: try ContractCoding.encode(event), as: UTF8.self),
                                      TraceContext.current?.traceparent])
    }
}
