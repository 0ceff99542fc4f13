import Foundation
import Postgres

/// The event ids Kafka acknowledged, remembered for the dedup window
/// (`ingest_accepted_events`, keyed by `uuid`). Ids are compared as UUIDs, so `0B7D…` and
/// `0b7d…` are the same event.
///
/// Lookups and inserts of concurrent requests are coalesced: while one statement runs, the
/// next requests queue and share the following one. A request still waits for its own ids
/// to be looked up, and for its accepted ids to be written, before it is answered.
public struct AcceptedEventLedger: Sendable {
    let database: PostgresClient
    let retentionDays: Int
    private let lookups: Coalescer<String, Set<String>>
    private let inserts: Coalescer<(key: String, userID: String), Void>

    public init(database: PostgresClient, retentionDays: Int) {
        self.database = database
        self.retentionDays = retentionDays
        lookups = Coalescer { keys in
            let rows = try await database.query(
                "SELECT event_id::text FROM ingest_accepted_events WHERE event_id = ANY($1::uuid[])", [keys])
            var found: Set<String> = []
            for row in rows { found.insert(try row.decode(String.self, "event_id")) }
            return found
        }
        inserts = Coalescer { rows in
            _ = try await database.execute("""
                INSERT INTO ingest_accepted_events (event_id, user_id, accepted_at)
                SELECT id, user_id, now() FROM unnest($1::uuid[], $2::text[]) AS t (id, user_id)
                ON CONFLICT (event_id) DO NOTHING
                """, [rows.map(\.key), rows.map(\.userID)])
        }
    }

    /// The ledger key of an event id that is a UUID: its lower-case text form.
    static func key(_ eventID: String) -> String { eventID.lowercased() }

    /// Which of `keys` (from `key(_:)`) were accepted before; may also name ids of other
    /// requests looked up in the same statement.
    public func alreadyAccepted(_ keys: [String]) async throws -> Set<String> {
        guard !keys.isEmpty else { return [] }
        return try await lookups.run(keys)
    }

    /// Records ids Kafka acknowledged (already-present ids are left as they are).
    public func record(_ keys: [String], userID: String) async throws {
        guard !keys.isEmpty else { return }
        try await inserts.run(keys.map { ($0, userID) })
    }

    /// Forgets ids older than the retention window, in bounded chunks; returns how many.
    @discardableResult
    public func purgeExpired(chunk: Int = 10_000) async throws(PostgresError) -> Int {
        var total = 0
        while true {
            let deleted = try await database.execute("""
                DELETE FROM ingest_accepted_events WHERE event_id IN (
                    SELECT event_id FROM ingest_accepted_events
                    WHERE accepted_at < now() - make_interval(days => $1) LIMIT $2)
                """, [retentionDays, chunk])
            total += deleted
            if deleted < chunk { return total }
        }
    }
}
