import Foundation
import Lifecycle
import Postgres
import ServiceRuntime

/// The event ids Kafka acknowledged, remembered for the dedup window
/// (`ingest_accepted_events`, `uuid` ids, partitioned by UTC day of acceptance). Ids are
/// compared as UUIDs, so `0B7D…` and `0b7d…` are the same event.
///
/// Lookups and inserts of concurrent requests are coalesced: while one statement runs, the
/// next requests queue and share the following one. A request still waits for its own ids
/// to be looked up, and for its accepted ids to be written, before it is answered. Inserts
/// are one COPY into today's partition; the window expires by dropping whole days
/// (`maintainPartitions()`).
///
/// A lookup reads only the days an earlier acceptance of these events can be in: an event
/// is accepted only while its `clientTimestamp` is at most `maxClockSkewAhead` ahead of the
/// server clock, so a resend of it (same id, same timestamp) was accepted no earlier than
/// that timestamp minus the skew (minus an hour for the database clock differing from
/// ingest's). Under normal use that is today's partition and perhaps yesterday's, not all
/// thirty.
public struct AcceptedEventLedger: Sendable {
    let database: PostgresClient
    let retentionDays: Int
    let earliestAcceptanceAllowance: TimeInterval
    private let lookups: Coalescer<(key: String, earliest: Date), Set<String>>
    private let inserts: Coalescer<(key: String, userID: String), Void>

    /// How many days ahead of today partitions are kept created.
    public static let daysAhead = 3
    /// SQLSTATE of "no partition of relation … found for row" (check_violation).
    static let noPartitionForRow = "23514"

    public init(database: PostgresClient, retentionDays: Int, maxClockSkewAhead: TimeInterval = 600) {
        self.database = database
        self.retentionDays = retentionDays
        earliestAcceptanceAllowance = maxClockSkewAhead + 3600
        lookups = Coalescer(concurrentRuns: 2) { items in
            let earliest = items.lazy.map(\.earliest).min() ?? .distantPast
            // One index scan of the sorted ids per day, its plan pinned (migration 107).
            let rows = try await database.query("SELECT event_id FROM ingest_accepted_events_find($1::uuid[], $2)",
                                                [items.map(\.key), earliest])
            var found: Set<String> = []
            for row in rows { found.insert(try row.decode(String.self, "event_id")) }
            return found
        }
        inserts = Coalescer(concurrentRuns: 2) { rows in
            var copy = PostgresCopyRows(reservingBytes: rows.count * 48)
            for row in rows {
                copy.append(row.key)
                copy.append(row.userID)
                copy.endRow()
            }
            let insert = { @Sendable (copy: PostgresCopyRows) async throws in
                _ = try await database.withConnection { connection in
                    try await connection.copy(into: "ingest_accepted_events", columns: ["event_id", "user_id"], rows: copy)
                }
            }
            do {
                try await insert(copy)
            } catch let error as PostgresError where error.sqlState == Self.noPartitionForRow {
                // Today's partition does not exist yet (the hourly maintenance has not run
                // since midnight): create the days and write again.
                _ = try await database.query("SELECT ingest_accepted_events_maintain($1, $2)", [retentionDays, Self.daysAhead])
                try await insert(copy)
            }
        }
    }

    /// The ledger key of an event id that is a UUID: its lower-case text form.
    static func key(_ eventID: String) -> String { eventID.lowercased() }

    /// Which of `keys` (from `key(_:)`) were accepted before; may also name ids of other
    /// requests looked up in the same statement. `earliestClientTimestamp` is the earliest
    /// `clientTimestamp` of those events.
    public func alreadyAccepted(_ keys: [String], earliestClientTimestamp: Date) async throws -> Set<String> {
        guard !keys.isEmpty else { return [] }
        let earliest = earliestClientTimestamp.addingTimeInterval(-earliestAcceptanceAllowance)
        return try await lookups.run(keys.map { ($0, earliest) })
    }

    /// Records ids Kafka acknowledged (an id recorded twice is found all the same).
    public func record(_ keys: [String], userID: String) async throws {
        guard !keys.isEmpty else { return }
        try await inserts.run(keys.map { ($0, userID) })
    }

    /// Creates the partitions of yesterday to `daysAhead` days ahead and forgets ids past the
    /// retention window by dropping the days wholly older than it (and deleting such rows of
    /// the default partition); returns how many days were dropped.
    @discardableResult
    public func maintainPartitions() async throws(PostgresError) -> Int {
        let rows = try await database.query("SELECT ingest_accepted_events_maintain($1, $2) AS dropped",
                                            [retentionDays, Self.daysAhead])
        return try rows.first?.decode(Int.self, "dropped") ?? 0
    }
}
