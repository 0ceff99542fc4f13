import Foundation
import Kafka
import Lifecycle
import Postgres
import ServiceLogging
import ServiceRuntime

/// What `backbone dev` does at start about an earlier run that did not drain. Its embedded
/// broker kept the only copy of the records in memory; the copies in the journal
/// (`DevBrokerJournal`) of what that run's consumers had not processed go to the new broker
/// before any consumer starts. Ingest's dedup ledger may still hold ids of events whose records
/// were never kept (accepted by an ingest of another process, with `--infra-only`, or by a
/// version without the journal): a resend of such an event would be answered `duplicate` and
/// never processed, so the ledger forgets the ids that a projection's event log lacks and the
/// journal does not hold (a resend is accepted again; each projection still skips what its own
/// log holds, so nothing is counted twice), and the log says how many there were.
///
/// The check touches only the ledger rows accepted since the last moment every earlier one was
/// known processed (`dev_recovery_checked`): the end of the last recovery, a drain that found
/// nothing left, and the journal's pruning while the stack runs (`markChecked`). A restart after
/// millions of events therefore looks at the last few seconds' ids, not at the whole ledger; the
/// first start of a folder whose ledger predates that mark checks every row once, and says so.
/// Each id is found in the event logs through their primary keys (the lower- and upper-case
/// spellings of the uuid, as apps send them); the rare id found in neither spelling is looked
/// for once more, all of them in one pass over each log.
enum DevRecovery {
    struct Outcome: Equatable {
        var republished: [String: Int]
        var lost: Int
        /// Ledger rows the check looked at.
        var checked: Int = 0
    }

    /// Ids forgotten per statement.
    static let batchSize = 20_000
    /// Up to this many ids since the mark are looked up one by one; more are matched in bulk.
    static let probeLimit = 200_000

    /// Creates the mark of what was checked (the dev stack's own table).
    static func prepare(_ database: PostgresClient) async throws {
        try await database.withConnection { connection in try await connection.runScript("""
            -- Every ledger row accepted before `through` was processed by both projections, or was
            -- forgotten by a recovery; a recovery checks only the rows accepted since.
            CREATE TABLE IF NOT EXISTS dev_recovery_checked (
                singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                through timestamptz NOT NULL);
            """) }
    }

    /// Moves the mark forward to `through` (never back).
    static func markChecked(through: Date, database: PostgresClient) async throws {
        try await database.execute("""
            INSERT INTO dev_recovery_checked (singleton, through) VALUES (true, $1)
            ON CONFLICT (singleton) DO UPDATE SET through = greatest(dev_recovery_checked.through, EXCLUDED.through)
            """, [through])
    }

    /// How often a running stack moves the mark (`marker`).
    static let markInterval = Duration.seconds(10)

    /// While the stack runs with its journal: every ledger row accepted before the oldest copy
    /// of `topic` still kept for `cluster` was processed (its copy was kept before Kafka
    /// acknowledged it, and ingest recorded the id after that; a copy goes only once every
    /// reader processed it), so the mark moves there every `markInterval`. Valid for what the
    /// stack's own producers send, which is all a full stack's ingest sends.
    static func marker(cluster: String, topic: String, database: PostgresClient, logger: Logger) -> any Service {
        PeriodicTask(name: "dev-recovery-mark", every: markInterval, failure: "could not mark what the consumers processed",
                     logger: logger) {
            try await database.execute("""
                INSERT INTO dev_recovery_checked (singleton, through)
                SELECT true, least(now(), (SELECT min(kept_at) FROM dev_broker_journal WHERE cluster_id = $1 AND topic = $2))
                ON CONFLICT (singleton) DO UPDATE SET through = greatest(dev_recovery_checked.through, EXCLUDED.through)
                """, [cluster, topic])
        }
    }

    @discardableResult
    /// - Parameter currentCluster: the new broker's identity (`DevBrokerJournal.clusterIdentity`);
    ///   nil: nothing is republished, since the copies cannot be told from the new broker's.
    static func recover(database: PostgresClient, producer: any KafkaRecordSender, readingEventsTopic: String,
                        currentCluster: String?, logger: Logger) async throws -> Outcome {
        var outcome = Outcome(republished: [:], lost: 0)
        // First what is gone: ids neither processed nor in the journal (with the copies still
        // there, whatever the producer below does with the ones it republishes).
        let started = try await database.query("SELECT now() AS now, (SELECT through FROM dev_recovery_checked) AS through")
        let checkStart = try started.first?.decode(Date.self, "now") ?? Date()
        let through = try started.first?.decode(Date?.self, "through")
        (outcome.checked, outcome.lost) = try await forgetLost(since: through, readingEventsTopic: readingEventsTopic,
                                                               database: database, logger: logger)
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
        // Everything accepted before this start went to an earlier broker and is now settled.
        try await markChecked(through: checkStart, database: database)
        return outcome
    }

    /// Forgets the ids accepted since `since` (every one when nil) that an event log lacks and
    /// the journal does not hold. Returns how many rows it looked at and how many it forgot.
    ///
    /// The ledger has no index on `accepted_at` (ids are written by COPY into day partitions),
    /// so the rows since `since` are one pass over the days that hold them. Up to
    /// `probeLimit` of them (a restart: seconds' worth) are each looked up in the event logs by
    /// primary key; more (the first start of this version in a folder with data) are matched
    /// against each whole log in one hash join on its lower-cased ids.
    static func forgetLost(since: Date?, readingEventsTopic: String, database: PostgresClient,
                           logger: Logger) async throws -> (checked: Int, lost: Int) {
        let clock = ContinuousClock()
        let started = clock.now
        let from = since ?? Date(timeIntervalSince1970: 0)
        let counted = try await database.query("SELECT count(*)::bigint AS n FROM ingest_accepted_events WHERE accepted_at >= $1", [from])
        let checked = try counted.first?.decode(Int.self, "n") ?? 0
        guard checked > 0 else { return (0, 0) }
        let candidates = "WITH candidates AS MATERIALIZED (SELECT a.event_id::text AS id FROM ingest_accepted_events a WHERE a.accepted_at >= $1)"
        var unseen: [String]
        let exhaustive = checked > probeLimit
        if exhaustive {
            logger.notice("checking every id of the dedup ledger since the last mark against the event logs "
                          + "(the first start of this version in this folder, or a run killed long after its last mark)",
                          metadata: ["events.accepted": "\(checked)"])
            unseen = try await database.withTransaction { connection in
                try await connection.execute("SET LOCAL work_mem = '256MB'")
                return try await connection.query("""
                    \(candidates)
                    SELECT c.id FROM candidates c WHERE NOT EXISTS (SELECT 1 FROM progress_event_log p WHERE lower(p.event_id) = c.id)
                    UNION
                    SELECT c.id FROM candidates c WHERE NOT EXISTS (SELECT 1 FROM analytics_events e WHERE lower(e.event_id) = c.id)
                    """, [from]).map { try $0.decode(String.self, "id") }
            }
        } else {
            unseen = try await database.query("""
                \(candidates)
                SELECT c.id FROM candidates c
                WHERE NOT (EXISTS (SELECT 1 FROM progress_event_log p WHERE p.event_id IN (c.id, upper(c.id)))
                           AND EXISTS (SELECT 1 FROM analytics_events e WHERE e.event_id IN (c.id, upper(c.id))))
                """, [from]).map { try $0.decode(String.self, "id") }
        }
        let elapsed = clock.now - started
        if elapsed >= .seconds(1) {
            logger.info("checked the dedup ledger against the event logs",
                        metadata: ["events.checked": "\(checked)", "events.unseen": "\(unseen.count)", "duration": "\(elapsed)"])
        }
        guard !unseen.isEmpty else { return (checked, 0) }
        // Spelled otherwise in a log (mixed case): one pass over each log for all of them (the
        // exhaustive check compared every spelling already).
        var processedIn: [Set<String>] = []
        for log in ["progress_event_log", "analytics_events"] where !exhaustive {
            let found = try await database.query(
                "SELECT DISTINCT lower(event_id) AS id FROM \(log) WHERE lower(event_id) = ANY($1::text[])", [unseen])
            processedIn.append(Set(try found.map { try $0.decode(String.self, "id") }))
        }
        // The journal's copies come back with the republish: those ids stay remembered.
        let kept = Set(try await database.query("""
            SELECT DISTINCT dev_broker_journal_event_id(value) AS id FROM dev_broker_journal WHERE topic = $1
            """, [readingEventsTopic]).compactMap { try $0.decode(String?.self, "id") })
        let lost = unseen.filter { id in !kept.contains(id) && (exhaustive || !processedIn.allSatisfy { $0.contains(id) }) }
        for start in stride(from: 0, to: lost.count, by: batchSize) {
            try await database.execute("DELETE FROM ingest_accepted_events WHERE event_id = ANY($1::uuid[])",
                                       [Array(lost[start..<min(start + batchSize, lost.count)])])
        }
        return (checked, lost.count)
    }
}
