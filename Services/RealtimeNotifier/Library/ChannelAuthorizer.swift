import Auth
import Foundation
import Postgres

/// Who may join (read) and broadcast on (write) a channel.
///
/// - `user:{id}`: only the user `id` (the token's `sub`).
/// - `room:{id}`: its owner; anyone when the room is public. Owner and visibility come from
///   the notifier's own `realtime_rooms`, fed by `room.uploads.v1` (as soon as upload-init
///   answered), `room.transcode.requests.v1` and `room.transcode.status.v1`; no other service's
///   table is read. A room not known yet is waited for (`unknownRoomWait`: an app that joins
///   right after upload-init may be ahead of the announcement), then refused. Only the owner
///   may broadcast on a room.
/// - Service tokens (`role: "service"`) may read and write every channel.
/// - The project's anon key (what Supabase's SDKs open the socket with, and send as the join's
///   `access_token` while nobody is signed in) is an anonymous client: it may read public rooms
///   only, and write nowhere. The user's session, sent as the join's `access_token` or in an
///   `access_token` message, is what opens the user's own channels and private rooms.
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
    /// How long a join of a room not known yet waits for its announcement.
    let unknownRoomWait: Duration
    /// The project's publishable keys, taken as the anon key is (`RealtimeConfiguration.publishableKeys`).
    let publishableKeys: Set<String>

    public init(codec: JWTCodec, database: PostgresClient, unknownRoomWait: Duration = .seconds(5),
                publishableKeys: Set<String> = []) {
        self.codec = codec
        self.database = database
        self.unknownRoomWait = unknownRoomWait
        self.publishableKeys = publishableKeys
    }

    /// What a publishable key stands for: the app, no user.
    static let anonymous = JWTClaims(sub: "", role: "anon")

    /// The verified claims of a socket's apikey or a join's `access_token` (a user's session, a
    /// service token, or the project's anon key or one of its publishable keys), or why it was
    /// refused.
    public func verify(_ token: String) -> Result<JWTClaims, AuthError> {
        if publishableKeys.contains(token) { return .success(Self.anonymous) }
        do {
            return .success(try codec.verify(token, acceptingAnonymous: true))
        } catch {
            return .failure(error)
        }
    }

    /// `verify`, waiting for the key set to be read again when the token names a key it does not
    /// hold yet (a session signed with a key the provider has just added).
    public func verifyRefreshingKeys(_ token: String) async -> Result<JWTClaims, AuthError> {
        if publishableKeys.contains(token) { return .success(Self.anonymous) }
        do {
            return .success(try await codec.verifyRefreshingKeys(token, acceptingAnonymous: true))
        } catch {
            return .failure(error)
        }
    }

    public func canRead(_ claims: JWTClaims, _ channel: ChannelName) async throws -> Decision {
        if claims.isService { return .allowed }
        switch channel.kind {
        case .user(let id):
            if claims.isAnonymous { return .denied(Self.anonymousRefusal(channel)) }
            return id == claims.sub ? .allowed : .denied("Unauthorized: user channels are only for their user")
        case .room(let id):
            guard let room = try await awaitedRoom(id) else { return .denied("Unauthorized: unknown room") }
            if room.visibility == "public" { return .allowed }
            if claims.isAnonymous { return .denied(Self.anonymousRefusal(channel)) }
            return room.owner == claims.sub ? .allowed : .denied("Unauthorized: private room")
        case .other:
            return .denied("Unauthorized: unknown channel")
        }
    }

    /// Supabase's words for a join its policies refuse, and what the client is missing.
    static func anonymousRefusal(_ channel: ChannelName) -> String {
        "Unauthorized: You do not have permissions to read from this Channel topic: \(channel.name)"
            + " (the anon key names no user: send the signed-in user's access_token)"
    }

    public func canWrite(_ claims: JWTClaims, _ channel: ChannelName) async throws -> Decision {
        if claims.isService { return .allowed }
        if claims.isAnonymous { return .denied("Unauthorized: the anon key may not broadcast") }
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

    /// `room(_:)`, waiting up to `unknownRoomWait` for a room not known yet.
    func awaitedRoom(_ id: String) async throws -> Room? {
        let deadline = ContinuousClock.now + unknownRoomWait
        while true {
            if let room = try await room(id) { return room }
            guard ContinuousClock.now < deadline else { return nil }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// The notifier's own `realtime_rooms`, fed by the upload announcements, the transcode requests and statuses.
    func room(_ id: String) async throws -> Room? {
        guard let row = try await database.query(RealtimeSQL.room, [id]).first else { return nil }
        return Room(owner: try row.decode(String.self, "owner_user_id"), visibility: try row.decode(String?.self, "visibility"))
    }
}
