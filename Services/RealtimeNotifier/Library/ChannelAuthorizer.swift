import Auth
import Foundation
import Postgres

/// Who may join (read) and broadcast on (write) a channel.
///
/// - `user:{id}`: only the user `id` (the token's `sub`).
/// - `room:{id}`: its owner; anyone when the room is public. Owner and visibility come from
///   `realtime_rooms` (fed by `room.transcode.status.v1`), falling back to ingest's `rooms`
///   table when the room is not known there yet or its visibility was never reported.
///   Unknown rooms are refused. Only the owner may broadcast on a room.
/// - Service tokens (`role: "service"`) may read and write every channel.
public struct ChannelAuthorizer: Sendable {
    public enum Decision: Sendable, Equatable {
        case allowed
        case denied(String)
    }

    struct Room: Sendable, Equatable {
        var owner: String
        var visibility: String?
    }

    let codec: JWTCodec
    let database: PostgresClient

    public init(codec: JWTCodec, database: PostgresClient) {
        self.codec = codec
        self.database = database
    }

    /// The verified claims of a token, or why it was refused.
    public func verify(_ token: String) -> Result<JWTClaims, AuthError> {
        do {
            return .success(try codec.verify(token))
        } catch {
            return .failure(error)
        }
    }

    public func canRead(_ claims: JWTClaims, _ channel: ChannelName) async throws -> Decision {
        if claims.isService { return .allowed }
        switch channel.kind {
        case .user(let id):
            return id == claims.sub ? .allowed : .denied("Unauthorized: user channels are only for their user")
        case .room(let id):
            guard let room = try await room(id) else { return .denied("Unauthorized: unknown room") }
            if room.owner == claims.sub || room.visibility == "public" { return .allowed }
            return .denied("Unauthorized: private room")
        case .other:
            return .denied("Unauthorized: unknown channel")
        }
    }

    public func canWrite(_ claims: JWTClaims, _ channel: ChannelName) async throws -> Decision {
        if claims.isService { return .allowed }
        switch channel.kind {
        case .user(let id):
            return id == claims.sub ? .allowed : .denied("Unauthorized: user channels are only for their user")
        case .room(let id):
            guard let room = try await room(id), room.owner == claims.sub else {
                return .denied("Unauthorized: only the room owner may broadcast")
            }
            return .allowed
        case .other:
            return .denied("Unauthorized: unknown channel")
        }
    }

    /// Our read model first; ingest's `rooms` when we lack the room or its visibility.
    func room(_ id: String) async throws -> Room? {
        var known: Room?
        if let row = try await database.query(RealtimeSQL.room, [id]).first {
            known = Room(owner: try row.decode(String.self, "owner_user_id"), visibility: try row.decode(String?.self, "visibility"))
        }
        if let known, known.visibility != nil { return known }
        let present = try await database.query(RealtimeSQL.ingestRoomsExists).first?.decode(Bool.self, "present") ?? false
        if present, let row = try await database.query(RealtimeSQL.ingestRoom, [id]).first {
            return Room(owner: try row.decode(String.self, "owner_user_id"), visibility: try row.decode(String?.self, "visibility"))
        }
        return known
    }
}
