import BackboneTestSupport
import Foundation
import Ingest
import Postgres
import Testing

@Suite("The dedup ledger by day: upgrade of an existing ledger, lookups, expiry by dropping days", .serialized,
       .enabled(if: Integration.isEnabled), .timeLimit(.minutes(2)))
struct AcceptedEventLedgerIntegrationTests {
    @Test("a ledger written before the partitions keeps every id through migration 105, and expired days are dropped")
    func upgradeKeepsRowsAndExpires() async throws {
        try await TestDatabase.with("ingest_ledger", maxConnections: 4) { client in
            let before = IngestSchema.migrations.filter { $0.version < 105 }
            _ = try await PostgresMigrator(migrations: before, logger: testLogger).migrate(client)
            let recent = [UUID(), UUID()].map { $0.uuidString.lowercased() }
            let old = UUID().uuidString.lowercased()
            _ = try await client.execute("""
                INSERT INTO ingest_accepted_events (event_id, user_id, accepted_at)
                VALUES ($1::uuid, 'user-a', now() - interval '2 hours'), ($2::uuid, 'user-b', now()),
                       ($3::uuid, 'user-c', now() - interval '40 days')
                """, [recent[0], recent[1], old])

            let applied = try await PostgresMigrator(migrations: IngestSchema.migrations, logger: testLogger).migrate(client)
            #expect(applied.first == 105, "\(applied)")  // and the later migrations, which are not the ledger's
            let count = try await client.query("SELECT count(*)::int AS n FROM ingest_accepted_events")
            #expect(try count.first?.decode(Int.self, "n") == 3)
            let partitioned = try await client.query("SELECT count(*)::int AS n FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid WHERE c.relname = 'ingest_accepted_events'")
            #expect(try partitioned.first?.decode(Int.self, "n") == 1)

            let ledger = AcceptedEventLedger(database: client, retentionDays: 30)
            let fresh = UUID().uuidString.lowercased()
            let found = try await ledger.alreadyAccepted(recent + [fresh], earliestClientTimestamp: Date().addingTimeInterval(-3 * 3600))
            #expect(found == Set(recent))
            // A resend of the 40-day-old event carries its own (old) timestamp.
            #expect(try await ledger.alreadyAccepted([old], earliestClientTimestamp: Date().addingTimeInterval(-40 * 86_400)) == [old])

            // New ids land in today's partition and are found; a second record of the same id is harmless.
            try await ledger.record([fresh], userID: "user-d")
            try await ledger.record([fresh], userID: "user-d")
            #expect(try await ledger.alreadyAccepted([fresh], earliestClientTimestamp: Date()) == [fresh])

            // Maintenance creates the coming days and drops the expired one (its rows with it).
            let dropped = try await ledger.maintainPartitions()
            #expect(dropped >= 1)
            #expect(try await ledger.alreadyAccepted([old], earliestClientTimestamp: Date().addingTimeInterval(-40 * 86_400)).isEmpty)
            #expect(try await ledger.alreadyAccepted(recent, earliestClientTimestamp: Date().addingTimeInterval(-3 * 3600)) == Set(recent))
            let ahead = try await client.query("""
                SELECT count(*)::int AS n FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'ingest_accepted_events'::regclass
                  AND c.relname = 'ingest_accepted_events_' || to_char((now() AT TIME ZONE 'UTC')::date + \(AcceptedEventLedger.daysAhead), 'YYYYMMDD')
                """)
            #expect(try ahead.first?.decode(Int.self, "n") == 1)
            #expect(try await ledger.maintainPartitions() == 0)

            // Today's day missing (the maintenance has not run since midnight): the write creates it.
            _ = try await client.execute("DROP TABLE ingest_accepted_events_" + (try await client.query(
                "SELECT to_char((now() AT TIME ZONE 'UTC')::date, 'YYYYMMDD') AS d").first!.decode(String.self, "d")))
            let late = UUID().uuidString.lowercased()
            try await ledger.record([late], userID: "user-e")
            #expect(try await ledger.alreadyAccepted([late], earliestClientTimestamp: Date()) == [late])
        }
    }

    @Test("replicas maintaining the ledger at the same moment all succeed (each creates days the others are creating)")
    func concurrentMaintenance() async throws {
        try await TestDatabase.with("ingest_ledger_race") { client in
            _ = try await PostgresMigrator(migrations: IngestSchema.migrations, logger: testLogger).migrate(client)
            // Four replicas' maintenance at once; each round asks for days no round made yet, so every call creates tables.
            for ahead in stride(from: 10, through: 60, by: 10) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<4 {
                        group.addTask { _ = try await client.query("SELECT ingest_accepted_events_maintain(30, $1)", [ahead]) }
                    }
                    try await group.waitForAll()
                }
            }
            let days = try await client.query("""
                SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'ingest_accepted_events'::regclass
                """)
            #expect(try days.first?.decode(Int.self, "n") == 62)
        }
    }
}
