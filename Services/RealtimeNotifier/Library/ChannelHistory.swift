import Contracts
import Foundation
import JSON
import Postgres

/// Reads the bounded per-channel history.
public struct ChannelHistory: Sendable {
    /// A channel's counters: last sequence handed out, and how far the history was trimmed.
    public struct State: Sendable, Equatable {
        public var lastSeq: Int64
        public var trimmedSeq: Int64
        public var trimmedAt: Date?

        public static let empty = State(lastSeq: 0, trimmedSeq: 0, trimmedAt: nil)
    }

    /// What a replay request resolves to.
    public struct ReplayStart: Sendable, Equatable {
        /// Deliver events after this sequence…
        public var after: Int64
        /// …up to this one (the channel's last sequence when asked).
        public var through: Int64
        /// True when events the client asked for were already trimmed.
        public var truncated: Bool
    }

    let database: PostgresClient
    let pageSize = 1_000

    public init(database: PostgresClient) { self.database = database }

    public func state(_ channel: ChannelName) async throws -> State {
        guard let row = try await database.query(RealtimeSQL.channelState, [channel.name]).first else { return .empty }
        return State(lastSeq: try row.decode(Int64.self, "last_seq"), trimmedSeq: try row.decode(Int64.self, "trimmed_seq"),
                     trimmedAt: try row.decode(Date?.self, "trimmed_at"))
    }

    /// Events with `after < seq <= through`, in order (paged internally).
    public func events(_ channel: ChannelName, after: Int64, through: Int64, limit: Int = .max) async throws -> [SequencedChannelEvent] {
        var result: [SequencedChannelEvent] = []
        var cursor = after
        while cursor < through, result.count < limit {
            let page = min(pageSize, limit - result.count)
            let rows = try await database.query(RealtimeSQL.eventsAfter, [channel.name, cursor, through, Int64(page)])
            for row in rows { result.append(try Self.event(row)) }
            guard rows.count == page, let last = result.last else { break }
            cursor = last.seq
        }
        return result
    }

    /// Where a replay starts and whether it still reaches back far enough.
    public func start(_ channel: ChannelName, replay: JoinOptions.Replay?, state: State) async throws -> ReplayStart {
        switch replay {
        case nil:
            return ReplayStart(after: state.lastSeq, through: state.lastSeq, truncated: false)
        case .afterSeq(let seq):
            let truncated = seq < state.trimmedSeq
            return ReplayStart(after: min(max(seq, state.trimmedSeq), state.lastSeq), through: state.lastSeq, truncated: truncated)
        case .since(let milliseconds):
            let since = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            let truncated = state.trimmedAt.map { $0 > since } ?? false
            let first = try await database.query(RealtimeSQL.firstSeqSince, [channel.name, milliseconds]).first?.decode(Int64?.self, "seq")
            let after = first.map { $0 - 1 } ?? state.lastSeq
            return ReplayStart(after: max(min(after, state.lastSeq), state.trimmedSeq), through: state.lastSeq, truncated: truncated)
        }
    }

    static func event(_ row: PostgresRow) throws -> SequencedChannelEvent {
        SequencedChannelEvent(
            channel: try row.decode(String.self, "channel"), seq: try row.decode(Int64.self, "seq"),
            event: try row.decode(String.self, "event"),
            payload: try row.decode(PostgresJSON.self, "payload").decode(JSONValue.self, decoder: ContractCoding.decoder),
            createdAt: try row.decode(Date.self, "created_at"))
    }
}
