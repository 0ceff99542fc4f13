import Foundation
import Ingest
import Lifecycle
import Postgres
import ServiceRuntime

/// The dedup ledger as it was before the by-day partitions (migrations 101 and 103): one
/// table with a `uuid` primary key and an `accepted_at` index, inserts by
/// `INSERT … SELECT FROM unnest … ON CONFLICT DO NOTHING`, coalesced the same way. Kept
/// here only as the benchmark's same-run baseline, in its own table.
struct PreviousLedger: Sendable {
    private let lookups: Coalescer<String, Set<String>>
    private let inserts: Coalescer<(key: String, userID: String), Void>

    init(database: PostgresClient) async throws {
        _ = try await database.execute("DROP TABLE IF EXISTS bench_previous_ledger")
        _ = try await database.execute("""
            CREATE TABLE bench_previous_ledger (
                event_id uuid PRIMARY KEY, user_id text NOT NULL, accepted_at timestamptz NOT NULL DEFAULT now())
            """)
        _ = try await database.execute("CREATE INDEX bench_previous_ledger_accepted_at ON bench_previous_ledger (accepted_at)")
        lookups = Coalescer { keys in
            let rows = try await database.query(
                "SELECT event_id::text FROM bench_previous_ledger WHERE event_id = ANY($1::uuid[])", [keys])
            var found: Set<String> = []
            for row in rows { found.insert(try row.decode(String.self, "event_id")) }
            return found
        }
        inserts = Coalescer { rows in
            _ = try await database.execute("""
                INSERT INTO bench_previous_ledger (event_id, user_id, accepted_at)
                SELECT id, user_id, now() FROM unnest($1::uuid[], $2::text[]) AS t (id, user_id)
                ON CONFLICT (event_id) DO NOTHING
                """, [rows.map(\.key), rows.map(\.userID)])
        }
    }

    func alreadyAccepted(_ keys: [String]) async throws -> Set<String> { try await lookups.run(keys) }
    func record(_ keys: [String], userID: String) async throws { try await inserts.run(keys.map { ($0, userID) }) }
}

/// `batches` fresh 100-id batches looked up and recorded, `connections` at a time; events/s.
func ledgerAlone(batches: Int, connections: Int,
                 lookup: @escaping @Sendable ([String]) async throws -> Set<String>,
                 record: @escaping @Sendable ([String], String) async throws -> Void) async throws -> Double {
    let keyBatches = (0..<batches).map { _ in (0..<IngestBench.eventsPerBatch).map { _ in UUID().uuidString.lowercased() } }
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for lane in 0..<connections {
            group.addTask {
                for index in stride(from: lane, to: keyBatches.count, by: connections) {
                    _ = try await lookup(keyBatches[index])
                    try await record(keyBatches[index], "user-\(index % 500)")
                }
            }
        }
        try await group.waitForAll()
    }
    let elapsed = ContinuousClock.now - start
    let seconds = elapsed.timeInterval
    return Double(batches * IngestBench.eventsPerBatch) / seconds
}

/// User plus system CPU seconds of this process so far.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// µs per id of `insert` and `lookup` (statements over a `uuid[]` named `ids`, `lookup` into an
/// `int` named `n`), each run for 20 arrays of 5,000 fresh ids inside one PL/pgSQL block.
func serverSideLedger(_ database: PostgresClient, insert: String, lookup: String) async throws -> (insert: Double, lookup: Double) {
    func timed(_ statement: String) async throws -> Double {
        let block = """
            DO $$ DECLARE ids uuid[]; n int; BEGIN
                FOR b IN 1..20 LOOP
                    SELECT array_agg(gen_random_uuid()) INTO ids FROM generate_series(1, 5000);
                    \(statement);
                END LOOP;
            END $$
            """
        let start = ContinuousClock.now
        _ = try await database.execute(block)
        let elapsed = ContinuousClock.now - start
        return elapsed.timeInterval * 1e6 / 100_000
    }
    // The id generation alone, subtracted from both.
    let generation = try await timed("n := 0")
    return (try await timed(insert) - generation, try await timed(lookup) - generation)
}
