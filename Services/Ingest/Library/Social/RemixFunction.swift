import Contracts
import Foundation
import HTTPRouting
import JSON
import ObjectStore
import Postgres

/// `POST /functions/v1/remix {"source_room_id", "title"?}` → 201 `{"room_id", "version_id",
/// "remixed_from"}`: the web editor's fork (seed `002_*` §9.2, "Remix 走 fork 模型"). The caller
/// gets a new public room whose first version is ready at once: the outputs of the source's
/// current version (manifest, layers, thumbnails — never the source scan, which may hold what the
/// owner's redactions hid) are copied server-side into the fork's own folder, so removing the
/// source, or erasing its owner, leaves the fork whole, and erasing the remixer erases the fork
/// (everything under `rooms/{fork}/`). Only a room the caller may read can be remixed: her own,
/// or a public one with a published version. The fork is written to ingest's rooms and announced
/// as `remix_created` on `room.interactions.v1` (the catalog lists it, the source's owner hears
/// it), acknowledged before the answer; a refused announcement removes the copies again.
struct RemixFunction: Sendable {
    let routes: SocialWriteRoutes
    let objects: any ObjectStore

    struct Body: Decodable {
        var sourceRoomId: String
        var title: String?
    }

    static let maxTitleCharacters = 100

    func handle(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await routes.caller(request)
        let body = try IngestRequestDecoding.decode(Body.self, from: request, snakeCase: true)
        guard Identifier.isValid(body.sourceRoomId) else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "source_room_id: \(Identifier.rule)")
        }
        var title = body.title?.trimmingCharacters(in: .whitespacesAndNewlines)
        if let given = title {
            guard !given.isEmpty, given.count <= Self.maxTitleCharacters, !Identifier.containsControlCharacter(given) else {
                throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                                message: "title: 1–\(Self.maxTitleCharacters) characters without control characters")
            }
        }
        try routes.admit(user)
        let room = try await routes.readableRoom(body.sourceRoomId, for: user)
        guard room.owner == user || room.visibility == .public else {
            throw HTTPError(.notFound, code: ErrorCode.notFound.rawValue, message: "source_room_id: no room \(body.sourceRoomId) you can remix")
        }
        let database = routes.database
        guard let source = try await database.query("""
            SELECT v.version_id, v.usdz_key, v.usdz_bytes, v.roomplan_json_key, v.roomplan_json_bytes, v.quality_grade, r.title, r.tags
            FROM room_versions v JOIN rooms r ON r.room_id = v.room_id
            WHERE v.room_id = $1 AND v.status = 'ready' ORDER BY v.updated_at DESC, v.version_id DESC LIMIT 1
            """, [body.sourceRoomId]).first else {
            throw HTTPError(.notFound, code: ErrorCode.notFound.rawValue, message: "source_room_id: the room has no published version to remix")
        }
        let sourceVersion = try source.decode(String.self, "version_id")
        let sourceKeys: Set<String> = [try source.decode(String.self, "usdz_key"), try source.decode(String.self, "roomplan_json_key")]
        if title == nil { title = String(("Remix: " + (try source.decode(String.self, "title"))).prefix(Self.maxTitleCharacters)) }
        let tags = try source.decode([String].self, "tags")
        let fork = UUID().uuidString.lowercased()
        let forkVersion = UUID().uuidString.lowercased()

        let copies = try await copyOutputs(from: "rooms/\(body.sourceRoomId)/\(sourceVersion)/", to: "rooms/\(fork)/\(forkVersion)/",
                                           skipping: sourceKeys)
        let interaction = RoomInteraction(
            interactionId: UUID().uuidString.lowercased(), kind: .remixCreated, actorId: user, roomId: body.sourceRoomId,
            roomOwnerId: room.owner, roomVisibility: room.visibility, at: SocialRequest.now())
        var announced = interaction
        announced.forkRoomId = fork
        announced.forkVersionId = forkVersion
        announced.sourceVersionId = sourceVersion
        announced.title = title
        announced.tags = tags
        announced.outputKeys = copies
        announced.sourceQualityGrade = try source.decode(String?.self, "quality_grade")
        let record = announced
        do {
            try await database.withTransaction { connection in
                _ = try await connection.execute("""
                    INSERT INTO rooms (room_id, owner_user_id, visibility, title, tags) VALUES ($1, $2, 'public', $3, $4::text[])
                    """, [fork, user, title ?? "", tags])
                _ = try await connection.execute("""
                    INSERT INTO room_versions (version_id, room_id, owner_user_id, status, usdz_key, usdz_bytes, roomplan_json_key,
                        roomplan_json_bytes, quota_month)
                    VALUES ($1, $2, $3, 'ready', $4, $5, $6, $7, date_trunc('month', now() AT TIME ZONE 'UTC')::date)
                    """, [forkVersion, fork, user, "rooms/\(fork)/\(forkVersion)/source.usdz", try source.decode(Int64.self, "usdz_bytes"),
                          "rooms/\(fork)/\(forkVersion)/roomplan.json", try source.decode(Int64.self, "roomplan_json_bytes")])
                try await routes.publish(record)
            }
        } catch {
            for key in copies { try? await objects.delete(key) }
            throw error
        }
        var w = JSONWriter()
        w.beginObject()
        w.key("remixed_from"); w.string(body.sourceRoomId)
        w.key("room_id"); w.string(fork)
        w.key("version_id"); w.string(forkVersion)
        w.endObject()
        return HTTPResponse(status: .created, headers: ["Content-Type": "application/json"], body: w.bytes)
    }

    /// Copies every object under `from` but `skipping` to the same name under `to`; the new keys.
    func copyOutputs(from: String, to: String, skipping: Set<String>) async throws -> [String] {
        var copied: [String] = []
        do {
            for object in try await objects.list(prefix: from) where !skipping.contains(object.key) {
                let name = String(object.key.dropFirst(from.count))
                let bytes = try await objects.getBytes(object.key)
                _ = try await objects.put(bytes, key: to + name, contentType: Self.contentType(name))
                copied.append(to + name)
            }
        } catch {
            for key in copied { try? await objects.delete(key) }
            throw HTTPError(.serviceUnavailable, code: ErrorCode.serviceUnavailable.rawValue, message: "the room store is unavailable; retry later",
                            headers: ["Retry-After": String(routes.retryAfterSeconds)])
        }
        return copied
    }

    static func contentType(_ name: String) -> String {
        switch name.split(separator: ".").last.map(String.init) ?? "" {
        case "glb": "model/gltf-binary"
        case "json": "application/json"
        case "png": "image/png"
        case "webp": "image/webp"
        default: "application/octet-stream"
        }
    }
}
