import Auth
import Contracts
import Foundation
import HTTPRouting
import JSON
import Kafka
import Postgres
import ServiceLogging
import ServiceRuntime

/// The writes of CrowdRoom's social layer, as Supabase's clients make them on PostgREST tables
/// (seed `002_*` §9.1: the detail page's comments and likes, the profile):
///
/// - `POST /rest/v1/comments` `{"room_id","body"[,"id","author_id"]}`; `DELETE /rest/v1/comments?id=eq.X`
/// - `POST /rest/v1/likes` `{"room_id"[,"user_id"]}`; `DELETE /rest/v1/likes?room_id=eq.X`
/// - `POST /rest/v1/profiles` `{"display_name","avatar_path"[,"id"]}` (an upsert with
///   `Prefer: resolution=merge-duplicates`); `PATCH /rest/v1/profiles?id=eq.X`
///
/// Each write is decided against ingest's write-side tables (`SocialWriteSchema`) and produced
/// to `room.interactions.v1` inside the same transaction: the answer comes once the broker
/// acknowledged the record, and a record the broker refused leaves nothing stored (503). The
/// author, liker or profile is always the caller; a comment or like needs a room the caller may
/// read (her own, or a public one with a published version). Answers are PostgREST's: 201, and
/// with `Prefer: return=representation` the rows as a JSON array; a second like or a comment id
/// used before is a 409 with PostgREST's `23505`, unless `Prefer: resolution=ignore-duplicates`.
/// A delete or update that matches nothing the caller may change changes nothing (204 / `[]`),
/// as PostgREST under row-level security answers.
struct SocialWriteRoutes: Sendable {
    let database: PostgresClient
    let producer: any KafkaRecordSender
    let topic: String
    let limiter: UserRateLimiter
    let authenticator: RequestAuthenticator
    let retryAfterSeconds: Int
    let logger: Logger

    func register(on router: inout Router, guarded: (@escaping HTTPHandler) -> HTTPHandler) {
        router.post("/rest/v1/comments", Self.pgrst(guarded { try await insertComment($0) }))
        router.delete("/rest/v1/comments", Self.pgrst { try await deleteComment($0) })
        router.post("/rest/v1/likes", Self.pgrst(guarded { try await insertLike($0) }))
        router.delete("/rest/v1/likes", Self.pgrst { try await deleteLike($0) })
        router.post("/rest/v1/profiles", Self.pgrst(guarded { try await upsertProfile($0) }))
        router.on(.patch, "/rest/v1/profiles", Self.pgrst(guarded { try await patchProfile($0) }))
    }

    /// `handler`, whose refusals carry PostgREST's error members too.
    static func pgrst(_ handler: @escaping HTTPHandler) -> HTTPHandler {
        { request in
            do { return try await handler(request) } catch let error as HTTPError { return error.postgRESTResponse() }
        }
    }

    // MARK: comments

    func insertComment(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await caller(request)
        let prefer = Prefer(request)
        let row = try SocialRequest.oneRow(request, table: "comments", columns: ["id", "room_id", "author_id", "body"])
        if let author = row["author_id"], author != .string(user) {
            throw HTTPError(.forbidden, code: ErrorCode.forbidden.rawValue, message: "author_id must be the signed-in user (or left out)")
        }
        let roomID = try SocialRequest.identifier(row, "room_id")
        let body = try SocialRequest.commentBody(row["body"])
        let commentID = try SocialRequest.optionalUUID(row, "id") ?? UUID().uuidString.lowercased()
        try admit(user)
        let room = try await readableRoom(roomID, for: user)
        let at = SocialRequest.now()
        let interaction = RoomInteraction(interactionId: UUID().uuidString.lowercased(), kind: .commentCreated, actorId: user,
                                          roomId: roomID, roomOwnerId: room.owner, roomVisibility: room.visibility,
                                          commentId: commentID, commentAuthorId: user, body: body, at: at)
        let inserted = try await insert("""
            INSERT INTO social_comments (comment_id, room_id, room_owner_id, author_id, body, created_at)
            VALUES ($1, $2, $3, $4, $5, $6::timestamptz)
            \(prefer.ignoreDuplicates ? "ON CONFLICT (comment_id) DO NOTHING" : "") RETURNING comment_id
            """, [commentID, roomID, room.owner, user, body, ContractCoding.formatTimestamp(at)], publishing: interaction,
            duplicate: Self.duplicate("comments_pkey", "Key (id)=(\(commentID)) already exists."))
        return prefer.answer(status: .created, rows: inserted ? [Self.comment(interaction)] : [])
    }

    func deleteComment(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await caller(request)
        let prefer = Prefer(request)
        let filters = try SocialRequest.filters(request, table: "comments", allowed: ["id", "room_id"])
        guard let commentID = filters["id"] else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidQuery.rawValue, message: "deleting comments needs id=eq.{comment id}")
        }
        let at = SocialRequest.now()
        let removed = try await remove("""
            UPDATE social_comments SET deleted_at = $3::timestamptz
            WHERE comment_id = $1 AND deleted_at IS NULL AND (author_id = $2 OR room_owner_id = $2)
              AND ($4 = '' OR room_id = $4)
            RETURNING room_id, room_owner_id, author_id, body, created_at
            """, [commentID, user, ContractCoding.formatTimestamp(at), filters["room_id"] ?? ""]) { row in
            RoomInteraction(
                interactionId: UUID().uuidString.lowercased(), kind: .commentDeleted, actorId: user,
                roomId: try row.decode(String.self, "room_id"), roomOwnerId: try row.decode(String.self, "room_owner_id"),
                commentId: commentID, commentAuthorId: try row.decode(String.self, "author_id"),
                body: try row.decode(String.self, "body"), at: try row.decode(Date.self, "created_at"))
        }
        return prefer.answer(status: .ok, rows: removed.map { [Self.comment($0)] } ?? [], minimalStatus: .noContent)
    }

    static func comment(_ i: RoomInteraction) -> [(String, JSONValue)] {
        [("id", .string(i.commentId ?? "")), ("room_id", .string(i.roomId ?? "")), ("author_id", .string(i.commentAuthorId ?? "")),
         ("body", .string(i.body ?? "")), ("created_at", .string(ContractCoding.formatTimestamp(i.at)))]
    }

    // MARK: likes

    func insertLike(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await caller(request)
        let prefer = Prefer(request)
        let row = try SocialRequest.oneRow(request, table: "likes", columns: ["room_id", "user_id"])
        if let liker = row["user_id"], liker != .string(user) {
            throw HTTPError(.forbidden, code: ErrorCode.forbidden.rawValue, message: "user_id must be the signed-in user (or left out)")
        }
        let roomID = try SocialRequest.identifier(row, "room_id")
        try admit(user)
        let room = try await readableRoom(roomID, for: user)
        let at = SocialRequest.now()
        let interaction = RoomInteraction(interactionId: UUID().uuidString.lowercased(), kind: .likeAdded, actorId: user,
                                          roomId: roomID, roomOwnerId: room.owner, roomVisibility: room.visibility, at: at)
        let inserted = try await insert("""
            INSERT INTO social_likes (room_id, user_id, created_at) VALUES ($1, $2, $3::timestamptz)
            \(prefer.ignoreDuplicates ? "ON CONFLICT (room_id, user_id) DO NOTHING" : "") RETURNING room_id
            """, [roomID, user, ContractCoding.formatTimestamp(at)], publishing: interaction,
            duplicate: Self.duplicate("likes_pkey", "Key (room_id, user_id)=(\(roomID), \(user)) already exists."))
        return prefer.answer(status: .created, rows: inserted ? [Self.like(interaction)] : [])
    }

    func deleteLike(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await caller(request)
        let prefer = Prefer(request)
        let filters = try SocialRequest.filters(request, table: "likes", allowed: ["room_id", "user_id"])
        guard let roomID = filters["room_id"] else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidQuery.rawValue, message: "deleting likes needs room_id=eq.{room id}")
        }
        // Only one's own like: another user's id matches nothing.
        guard filters["user_id"].map({ $0 == user }) ?? true else { return prefer.answer(status: .ok, rows: [], minimalStatus: .noContent) }
        let removed = try await remove("""
            DELETE FROM social_likes l WHERE l.room_id = $1 AND l.user_id = $2
            RETURNING l.created_at, (SELECT owner_user_id FROM rooms r WHERE r.room_id = l.room_id) AS owner
            """, [roomID, user]) { row in
            RoomInteraction(interactionId: UUID().uuidString.lowercased(), kind: .likeRemoved, actorId: user,
                            roomId: roomID, roomOwnerId: try row.decode(String?.self, "owner"),
                            at: try row.decode(Date.self, "created_at"))
        }
        return prefer.answer(status: .ok, rows: removed.map { [Self.like($0)] } ?? [], minimalStatus: .noContent)
    }

    static func like(_ i: RoomInteraction) -> [(String, JSONValue)] {
        [("room_id", .string(i.roomId ?? "")), ("user_id", .string(i.actorId)), ("created_at", .string(ContractCoding.formatTimestamp(i.at)))]
    }

    // MARK: profiles

    /// `POST`: a new profile; with `Prefer: resolution=merge-duplicates` an upsert that sets
    /// the columns given (PostgREST's merge), with `ignore-duplicates` nothing when one exists.
    func upsertProfile(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await caller(request)
        let prefer = Prefer(request)
        let row = try SocialRequest.oneRow(request, table: "profiles", columns: ["id", "display_name", "avatar_path"])
        if let id = row["id"], id != .string(user) {
            throw HTTPError(.forbidden, code: ErrorCode.forbidden.rawValue, message: "id must be the signed-in user: a profile is written by its user only")
        }
        let fields = try SocialRequest.profileFields(row)
        try admit(user)
        // The merge sets only the columns given (`$5`, `$6`: whether each was).
        let conflict = prefer.mergeDuplicates ? """
            ON CONFLICT (user_id) DO UPDATE SET
                display_name = CASE WHEN $5 THEN EXCLUDED.display_name ELSE p.display_name END,
                avatar_path = CASE WHEN $6 THEN EXCLUDED.avatar_path ELSE p.avatar_path END,
                updated_at = EXCLUDED.updated_at
            """ : prefer.ignoreDuplicates ? "ON CONFLICT (user_id) DO NOTHING" : ""
        var binds: [any PostgresBindable] = [user, fields.displayName.flatMap { $0 }, fields.avatarPath.flatMap { $0 },
                                              ContractCoding.formatTimestamp(SocialRequest.now())]
        if prefer.mergeDuplicates { binds += [fields.displayName != nil, fields.avatarPath != nil] }
        let values = binds
        return try await writeProfile(prefer: prefer, status: .created) { connection in
            do {
                return try await connection.queryPrepared("""
                    INSERT INTO social_profiles AS p (user_id, display_name, avatar_path, created_at, updated_at)
                    VALUES ($1, $2, $3, $4::timestamptz, $4::timestamptz) \(conflict)
                    RETURNING user_id, display_name, avatar_path, created_at, updated_at
                    """, values).first
            } catch let error as PostgresError where error.isUniqueViolation {
                throw Self.duplicate("profiles_pkey", "Key (id)=(\(user)) already exists.")
            }
        }
    }

    /// `PATCH ?id=eq.{user}`: the columns given, on the caller's own profile only.
    func patchProfile(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await caller(request)
        let prefer = Prefer(request)
        let filters = try SocialRequest.filters(request, table: "profiles", allowed: ["id"])
        let row = try SocialRequest.oneRow(request, table: "profiles", columns: ["display_name", "avatar_path"])
        let fields = try SocialRequest.profileFields(row)
        try admit(user)
        guard filters["id"].map({ $0 == user }) ?? true else { return prefer.answer(status: .ok, rows: [], minimalStatus: .noContent) }
        return try await writeProfile(prefer: prefer, status: .ok) { connection in
            try await connection.queryPrepared("""
                UPDATE social_profiles SET
                    display_name = CASE WHEN $4 THEN $2 ELSE display_name END,
                    avatar_path = CASE WHEN $5 THEN $3 ELSE avatar_path END,
                    updated_at = $6::timestamptz
                WHERE user_id = $1
                RETURNING user_id, display_name, avatar_path, created_at, updated_at
                """, [user, fields.displayName.flatMap { $0 }, fields.avatarPath.flatMap { $0 },
                      fields.displayName != nil, fields.avatarPath != nil, ContractCoding.formatTimestamp(SocialRequest.now())]).first
        }
    }

    /// Runs `write` (the profile row after it, or nil when nothing changed) and publishes the
    /// whole profile in the same transaction.
    func writeProfile(prefer: Prefer, status: HTTPStatus,
                      _ write: @escaping @Sendable (PostgresConnection) async throws -> PostgresRow?) async throws -> HTTPResponse {
        let written: RoomInteraction? = try await database.withTransaction { connection in
            guard let row = try await write(connection) else { return nil }
            let interaction = RoomInteraction(
                interactionId: UUID().uuidString.lowercased(), kind: .profileUpdated, actorId: try row.decode(String.self, "user_id"),
                displayName: try row.decode(String?.self, "display_name"), avatarPath: try row.decode(String?.self, "avatar_path"),
                at: try row.decode(Date.self, "updated_at"))
            try await publish(interaction)
            return interaction
        }
        guard let written else { return prefer.answer(status: status, rows: [], minimalStatus: status == .ok ? .noContent : status) }
        let row: [(String, JSONValue)] = [
            ("id", .string(written.actorId)), ("display_name", written.displayName.map(JSONValue.string) ?? .null),
            ("avatar_path", written.avatarPath.map(JSONValue.string) ?? .null),
            ("updated_at", .string(ContractCoding.formatTimestamp(written.at))),
        ]
        return prefer.answer(status: status, rows: [row], minimalStatus: status == .ok ? .noContent : status)
    }

    // MARK: shared

    /// The signed-in user of the request (a service token, which names nobody, is refused).
    func caller(_ request: HTTPRequest) async throws(HTTPError) -> String {
        let claims = try await authenticator.claims(request)
        guard !claims.isService else {
            throw HTTPError(.forbidden, code: ErrorCode.forbidden.rawValue, message: "comments, likes and profiles are written by a signed-in user")
        }
        return claims.sub
    }

    func admit(_ user: String) throws(HTTPError) {
        try limiter.admit(user)
    }

    struct Room: Sendable {
        var owner: String
        var visibility: RoomVisibility
    }

    /// The room as ingest knows it, when `user` may read it: her own, or a public room with a
    /// ready version. Any other room — unknown, private, not published yet — is a 404 that does
    /// not tell which.
    func readableRoom(_ roomID: String, for user: String) async throws -> Room {
        let rows = try await database.queryPrepared("""
            SELECT r.owner_user_id, r.visibility,
                   EXISTS (SELECT 1 FROM room_versions v WHERE v.room_id = r.room_id AND v.status = 'ready') AS published
            FROM rooms r WHERE r.room_id = $1
            """, [roomID])
        if let row = rows.first {
            let owner = try row.decode(String.self, "owner_user_id")
            let visibility = RoomVisibility(rawValue: try row.decode(String.self, "visibility")) ?? .private
            let published = try row.decode(Bool.self, "published")
            if owner == user || (visibility == .public && published) {
                return Room(owner: owner, visibility: visibility)
            }
        }
        throw HTTPError(.notFound, code: ErrorCode.notFound.rawValue,
                        message: "room_id: no room \(roomID) you can see (unknown, private, or not published yet)")
    }

    /// Inserts a row (`sql` returns it) and publishes `interaction` in one transaction: false when
    /// an existing row was kept (`Prefer: resolution=ignore-duplicates`), `duplicate` when the
    /// key is taken.
    func insert(_ sql: String, _ binds: [any PostgresBindable], publishing interaction: RoomInteraction,
                duplicate: @autoclosure () -> HTTPError) async throws -> Bool {
        try await database.withTransaction { connection in
            do {
                guard !(try await connection.queryPrepared(sql, binds)).isEmpty else { return false }
            } catch let error as PostgresError where error.isUniqueViolation {
                throw duplicate()
            }
            try await publish(interaction)
            return true
        }
    }

    /// Removes (or marks removed) what `sql` returns, and publishes the interaction `removal` makes
    /// of that row, in one transaction; nil when nothing matched.
    func remove(_ sql: String, _ binds: [any PostgresBindable],
                _ removal: (PostgresRow) throws -> RoomInteraction) async throws -> RoomInteraction? {
        try await database.withTransaction { connection in
            guard let row = try await connection.queryPrepared(sql, binds).first else { return nil }
            let interaction = try removal(row)
            try await publish(interaction)
            return interaction
        }
    }

    /// Produces `interaction` and waits for the broker; a refusal is a 503 that rolls back the
    /// transaction it runs in.
    func publish(_ interaction: RoomInteraction) async throws {
        let record = KafkaProducerRecord(topic: topic, key: Array(interaction.key.utf8), value: try ContractCoding.encode(interaction))
        do {
            _ = try await producer.send(record)
        } catch {
            logger.warning("social write not acknowledged by Kafka", metadata: ["error": "\(error)", "social.kind": interaction.kind.rawValue])
            throw HTTPError(.serviceUnavailable, code: ErrorCode.serviceUnavailable.rawValue,
                            message: "the write could not be queued; nothing was stored, retry later",
                            headers: ["Retry-After": String(retryAfterSeconds)])
        }
    }

    /// PostgREST's answer to a unique violation (its code, `23505`, and its message, naming
    /// the key that was taken).
    static func duplicate(_ constraint: String, _ details: String) -> HTTPError {
        HTTPError(.conflict, code: "23505", message: "duplicate key value violates unique constraint \"\(constraint)\": \(details)")
    }
}

/// What a `Prefer` header asks for (`return=representation`, `resolution=…`).
struct Prefer: Sendable {
    var representation = false
    var mergeDuplicates = false
    var ignoreDuplicates = false

    init(_ request: HTTPRequest) {
        var items: [String] = []
        for (name, value) in request.headers where name.lowercased() == "prefer" {
            items += value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        }
        representation = items.contains("return=representation")
        mergeDuplicates = items.contains("resolution=merge-duplicates")
        ignoreDuplicates = items.contains("resolution=ignore-duplicates")
    }

    /// The rows as a JSON array with `status` when the representation was asked for, else
    /// `minimalStatus` (default: `status`) with no body.
    func answer(status: HTTPStatus, rows: [[(String, JSONValue)]], minimalStatus: HTTPStatus? = nil) -> HTTPResponse {
        guard representation else { return HTTPResponse(status: minimalStatus ?? status) }
        var w = JSONWriter()
        w.beginArray()
        for row in rows {
            w.beginObject()
            for (key, value) in row { w.dynamicKey(key); w.value(value) }
            w.endObject()
        }
        w.endArray()
        return HTTPResponse(status: status, headers: ["Content-Type": "application/json; charset=utf-8"], body: w.bytes)
    }
}
