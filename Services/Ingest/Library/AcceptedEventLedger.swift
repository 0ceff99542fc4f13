import Foundation
import Postgres

/// The event ids Kafka acknowledged, remembered for the dedup window
/// (`ingest_accepted_events`). Ids are compared lower-cased, so `0B7D…` and `0b7d…` are the
/// same event.
public struct AcceptedEventLedger: Sendable {
    let database: PostgresClient
    let retentionDays: Int

    public init(database: PostgresClient, retentionDays: Int) {
        self.database = database
        self.retentionDays = retentionDays
    }

    static func key(_ eventID: String) -> String { eventID.lowercased() }

    /// Which of `eventIDs` (already lower-cased keys) were accepted before.
    public func alreadyAccepted(_ keys: [String]) async throws(PostgresError) -> Set<String> {
        guard !keys.isEmpty else { return [] }
        let rows = try await database.query(
            "SELECT event_id FROM ingest_accepted_events WHERE event_id = ANY($1::text[])", [keys])
        var found: Set<String> = []
        for row in rows { found.insert(try row.decode(String.self, "event_id")) }
        return found
    }

    /// Records ids Kafka acknowledged (already-present ids are left as they are).
    public func record(_ keys: [String], userID: String) async throws(PostgresError) {
        guard !keys.isEmpty else { return }
        try await database.execute("""
            INSERT INTO ingest_accepted_events (event_id, user_id, accepted_at)
            SELECT id, $2, now() FROM unnest($1::text[]) AS id
            ON CONFLICT (event_id) DO NOTHING
            """, [keys, userID])
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
