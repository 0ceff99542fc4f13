import DevInfrastructure
import BackboneTestSupport
import Foundation
@testable import Postgres
import ServiceLogging
import Testing

@Suite("PostgresMigrator against a real database", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(3)))
struct PostgresMigratorIntegrationTests {
    /// Migrations that log each application, so double application is visible.
    static func migrations() -> [PostgresMigration] {
        [
            PostgresMigration(version: 3, name: "third", sql: "INSERT INTO applied_log VALUES (3)"),
            PostgresMigration(version: 1, name: "first", sql: """
                CREATE TABLE applied_log (version int);
                SELECT pg_sleep(0.3);
                INSERT INTO applied_log VALUES (1);
                """),
            PostgresMigration(version: 2, name: "second", sql: "INSERT INTO applied_log VALUES (2)"),
        ]
    }

    @Test("two clients migrating at once apply each migration exactly once, in version order")
    func concurrentMigrators() async throws {
        let schema = TestPostgres.uniqueName("mig")
        let setup = TestPostgres.client(maxConnections: 1)
        try await setup.execute("CREATE SCHEMA \(schema)")
        let url = TestPostgres.url(searchPath: schema)
        let first = TestPostgres.client(maxConnections: 2, url: url)
        let second = TestPostgres.client(maxConnections: 2, url: url)
        let migrator = PostgresMigrator(migrations: Self.migrations(), logger: .disabled)

        async let a = migrator.migrate(first)
        async let b = migrator.migrate(second)
        let (appliedA, appliedB) = try await (a, b)
        #expect((appliedA + appliedB).sorted() == [1, 2, 3])
        #expect(appliedA.isEmpty || appliedB.isEmpty)

        let log = try await first.query("SELECT version FROM applied_log").map { try $0.decode(Int.self, "version") }
        #expect(log.sorted() == [1, 2, 3])
        let recorded = try await first.query("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
        #expect(try recorded.map { try $0.decode(Int64.self, "version") } == [1, 2, 3])
        #expect(try recorded[0].decode(String.self, "name") == "first")
        #expect(abs(try recorded[0].decode(Date.self, "applied_at").timeIntervalSinceNow) < 60)

        // Running again is a no-op; a new migration is picked up alone.
        #expect(try await migrator.migrate(first).isEmpty)
        let extended = PostgresMigrator(
            migrations: Self.migrations() + [PostgresMigration(version: 4, name: "fourth", sql: "INSERT INTO applied_log VALUES (4)")],
            logger: .disabled)
        #expect(try await extended.migrate(second) == [4])

        try await setup.execute("DROP SCHEMA \(schema) CASCADE")
        for client in [setup, first, second] { await client.close() }
    }

    @Test("a failing migration leaves no partial state, names its version, and releases the lock")
    func failingMigration() async throws {
        let schema = TestPostgres.uniqueName("migfail")
        let setup = TestPostgres.client(maxConnections: 1)
        try await setup.execute("CREATE SCHEMA \(schema)")
        let client = TestPostgres.client(maxConnections: 2, url: TestPostgres.url(searchPath: schema))
        let broken = PostgresMigrator(migrations: [
            PostgresMigration(version: 1, name: "ok", sql: "CREATE TABLE kept (id int)"),
            PostgresMigration(version: 2, name: "bad", sql: "CREATE TABLE half (id int); SELECT no_such_column FROM kept"),
        ], logger: .disabled)
        do {
            _ = try await broken.migrate(client)
            Issue.record("broken migration succeeded")
        } catch let error as PostgresError {
            #expect(error.context["pg.migration"] == "2")
            #expect(error.sqlState == "42703")
        }
        let tables = try await client.query("SELECT table_name FROM information_schema.tables WHERE table_schema = $1", [schema])
        let names = Set(try tables.map { try $0.decode(String.self, "table_name") })
        #expect(names == ["kept", "schema_migrations"])
        // The advisory lock was released: another migrator gets through immediately.
        let fixed = PostgresMigrator(migrations: [
            PostgresMigration(version: 1, name: "ok", sql: "CREATE TABLE kept (id int)"),
            PostgresMigration(version: 2, name: "good", sql: "CREATE TABLE half (id int)"),
        ], logger: .disabled)
        #expect(try await fixed.migrate(client) == [2])
        try await setup.execute("DROP SCHEMA \(schema) CASCADE")
        await setup.close()
        await client.close()
    }

    @Test("two OS processes and this one migrating at once apply each migration exactly once")
    func concurrentProcesses() async throws {
        let schema = TestPostgres.uniqueName("migproc")
        let setup = TestPostgres.client(maxConnections: 1)
        try await setup.execute("CREATE SCHEMA \(schema)")
        let url = TestPostgres.url(searchPath: schema)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(schema).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        async let first = MigrationHelperProcess.run(url: url, output: "\(directory)/0.txt")
        async let second = MigrationHelperProcess.run(url: url, output: "\(directory)/1.txt")
        let local = TestPostgres.client(maxConnections: 1, url: url)
        let appliedHere = try await PostgresMigrator(migrations: Self.migrations(), logger: .disabled).migrate(local)
        let statuses = await [first, second]
        #expect(statuses == [0, 0])
        var all = appliedHere
        for index in 0..<2 {
            let text = (try? String(contentsOfFile: "\(directory)/\(index).txt", encoding: .utf8)) ?? "missing"
            all += text.split(separator: ",").compactMap { Int($0) }
            #expect(text != "missing")
        }
        #expect(all.sorted() == [1, 2, 3])
        let log = try await local.query("SELECT version FROM applied_log").map { try $0.decode(Int.self, "version") }
        #expect(log.sorted() == [1, 2, 3])
        try await setup.execute("DROP SCHEMA \(schema) CASCADE")
        await setup.close()
        await local.close()
    }
}

/// Entry point used when the test binary is re-launched as a migrating helper process.
@Suite("Migration helper process")
struct MigrationHelperEntry {
    @Test("helper: migrate and write the applied versions",
          .enabled(if: ProcessInfo.processInfo.environment["BACKBONE_MIGRATION_HELPER_URL"] != nil))
    func migrationHelperProcess() async throws {
        let environment = ProcessInfo.processInfo.environment
        let url = try #require(environment["BACKBONE_MIGRATION_HELPER_URL"])
        let output = try #require(environment["BACKBONE_MIGRATION_HELPER_OUTPUT"])
        let client = TestPostgres.client(maxConnections: 1, url: url)
        let applied = try await PostgresMigrator(migrations: PostgresMigratorIntegrationTests.migrations(), logger: .disabled)
            .migrate(client)
        await client.close()
        try applied.map(String.init).joined(separator: ",").write(toFile: output, atomically: true, encoding: .utf8)
    }
}

enum MigrationHelperProcess {
    /// Re-launches this test binary filtered to the helper test, as a separate OS process.
    static func run(url: String, output: String) async -> Int32 {
        let outcome = await ProcessRunner.run(
            CommandLine.arguments[0], ["--testing-library", "swift-testing", "--filter", "migrationHelperProcess"],
            environment: ["BACKBONE_MIGRATION_HELPER_URL": url, "BACKBONE_MIGRATION_HELPER_OUTPUT": output])
        return outcome.status
    }
}
