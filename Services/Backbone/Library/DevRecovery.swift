import Logging
import Postgres

/// What `backbone dev` does at start about an earlier run that did not drain. Its embedded
/// broker kept the only copy of the records it accepted; a run killed (`kill -9`) before its
/// consumers processed them took them along, while ingest's dedup ledger still holds their ids —
/// so the app's resend of such an event (one whose answer it never got) would be answered
/// `duplicate` and never processed. At start the broker is new and empty, so every id in the
/// ledger that a projection's event log lacks was lost that way: the ledger forgets those ids
/// (a resend is accepted again; each projection still skips what its own log holds, so nothing
/// is counted twice), and the log says how many there were.
enum DevRecovery {
    @discardableResult
    static func forgetUnprocessed(database: PostgresClient, logger: Logger) async throws -> Int {
        let rows = try await database.query("""
            WITH lost AS (
                DELETE FROM ingest_accepted_events a
                WHERE NOT EXISTS (SELECT 1 FROM progress_event_log p WHERE lower(p.event_id) = a.event_id::text)
                   OR NOT EXISTS (SELECT 1 FROM analytics_events e WHERE lower(e.event_id) = a.event_id::text)
                RETURNING 1)
            SELECT count(*)::bigint AS lost FROM lost
            """)
        let lost = try rows.first?.decode(Int.self, "lost") ?? 0
        if lost > 0 {
            logger.warning("an earlier run in this folder stopped without processing events it had accepted (killed?): "
                           + "they went with its broker; the dedup ledger forgets them, so the app's resends are accepted",
                           metadata: ["events.lost": "\(lost)"])
        }
        return lost
    }
}
