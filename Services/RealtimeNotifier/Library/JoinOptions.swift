import Contracts
import Foundation
import JSON

/// What a `phx_join` asks for, read leniently (booleans and numbers may arrive as strings).
public struct JoinOptions: Sendable, Hashable {
    /// Where a replay starts.
    public enum Replay: Sendable, Hashable {
        /// Everything created after this time (`config.broadcast.replay.since`, epoch ms).
        case since(milliseconds: Int64)
        /// Everything after this sequence (`config.broadcast.replay.afterId`, the last `meta.id` seen).
        case afterSeq(Int64)
    }

    public var receiveOwnBroadcasts: Bool
    public var acknowledgeBroadcasts: Bool
    public var replay: Replay?
    public var accessToken: String?
    public var isPrivate: Bool

    public init(receiveOwnBroadcasts: Bool = false, acknowledgeBroadcasts: Bool = false, replay: Replay? = nil,
                accessToken: String? = nil, isPrivate: Bool = false) {
        self.receiveOwnBroadcasts = receiveOwnBroadcasts
        self.acknowledgeBroadcasts = acknowledgeBroadcasts
        self.replay = replay
        self.accessToken = accessToken
        self.isPrivate = isPrivate
    }

    public init(payload: JSONValue) {
        let config = payload["config"]
        let broadcast = config?["broadcast"]
        let replay = broadcast?["replay"]
        self.init(
            receiveOwnBroadcasts: Self.bool(broadcast?["self"]) ?? false,
            acknowledgeBroadcasts: Self.bool(broadcast?["ack"]) ?? false,
            replay: Self.int(replay?["afterId"] ?? replay?["after_id"]).map(Replay.afterSeq)
                ?? Self.int(replay?["since"]).map { Replay.since(milliseconds: $0) },
            accessToken: payload["access_token"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 },
            isPrivate: Self.bool(config?["private"]) ?? false)
    }

    static func bool(_ value: JSONValue?) -> Bool? {
        switch value {
        case .bool(let b): b
        case .string(let s): ["true", "1", "yes"].contains(s.lowercased()) ? true : (["false", "0", "no"].contains(s.lowercased()) ? false : nil)
        case .number(let n): n != 0
        default: nil
        }
    }

    static func int(_ value: JSONValue?) -> Int64? {
        switch value {
        case .number(let n) where n.isFinite && n >= 0 && n < 9.0e18: Int64(n)
        case .string(let s): Int64(s).flatMap { $0 >= 0 ? $0 : nil }
        default: nil
        }
    }
}
