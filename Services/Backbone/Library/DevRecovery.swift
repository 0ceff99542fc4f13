import Kafka
import Logging
import Postgres

/// What `backbone dev` does at start about an earlier run that did not drain. Its embedded
/// broker kept the only copy of the records in memory; the copies in the journal
/// (`DevBrokerJournal`) of what that run's consumers had not processed go to the new broker
/// before any consumer starts. Ingest's dedup ledger may still hold ids of events whose records
/// were never kept (accepted by an ingest of another process, with `--infra-only`, or by a
/// version without the journal): a resend of such an event would be answered `duplicate` and
/// never processed, so the ledger forgets the ids that a projection's event log lacks and the
/// journal does not hold (a resend is accepted again; each projection still skips what its own
/// log holds, so nothing is counted twice), and the log says how many there were.
enum DevRecovery {
    struct Outcome: Equatable {
        var republished: [String: Int]
        var lost: Int
    }

    @discardableResult
    /// - Parameter currentCluster: the new broker's identity (`DevBrokerJournal.clusterIdentity`);
    ///   nil: nothing is republished, since the copies cannot be told from the new broker's.
    static func recover(database: PostgresClient, producer: KafkaProducer, readingEventsTopic: String,
                        currentCluster: String?, logger: Logger) async throws -> Outcome {
        var outcome = Outcome(republished: [:], lost: 0)
        // First what is gone: ids neither processed nor in the journal (with the copies still
        // there, whatever the producer below does with the ones it republishes).
        let rows = try await database.query("""
            WITH kept AS (
                SELECT DISTINCT dev_broker_journal_event_id(value) AS event_id FROM dev_broker_journal WHERE topic = $1),
            lost AS (
                DELETE FROM ingest_accepted_events a
                WHERE (NOT EXISTS (SELECT 1 FROM progress_event_log p WHERE lower(p.event_id) = a.event_id::text)
                       OR NOT EXISTS (SELECT 1 FROM analytics_events e WHERE lower(e.event_id) = a.event_id::text))
                  AND NOT EXISTS (SELECT 1 FROM kept k WHERE k.event_id = a.event_id::text)
                RETURNING 1)
            SELECT count(*)::bigint AS lost FROM lost
            """, [readingEventsTopic])
        outcome.lost = try rows.first?.decode(Int.self, "lost") ?? 0
        if outcome.lost > 0 {
            logger.warning("an earlier run in this folder stopped without processing events it had accepted and not journaled (killed?): "
                           + "they went with its broker; the dedup ledger forgets them, so the app's resends are accepted",
                           metadata: ["events.lost": "\(outcome.lost)"])
        }
        if let cluster = currentCluster {
            outcome.republished = try await DevBrokerJournal.republish(from: database, currentCluster: cluster, through: producer)
        }
        if !outcome.republished.isEmpty {
            logger.warning("an earlier run in this folder stopped before its consumers processed every record (killed?): "
                          + "its journal gave them to the new broker",
                          metadata: ["records.republished": "\(outcome.republished.values.reduce(0, +))",
                                     "records.topics": "\(outcome.republished.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ","))"])
        }
        return outcome
    }
}
