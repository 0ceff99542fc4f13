import ServiceLogging

/// One schema change, applied once, in version order.
public struct PostgresMigration: Sendable {
    public var version: Int
    public var name: String
    public var sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}

/// Applies migrations exactly once across concurrent processes.
///
/// `migrate` takes a session advisory lock on one connection, creates `schema_migrations`
/// if needed, and applies each not-yet-recorded migration in its own transaction together
/// with its `schema_migrations` row. Migration SQL may contain several statements but no
/// transaction control of its own.
public struct PostgresMigrator: Sendable {
    /// Fixed `pg_advisory_lock` key shared by every migrating process ("backbone" in ASCII).
    public static let advisoryLockKey: Int64 = 0x6261_636B_626F_6E65

    public let migrations: [PostgresMigration]
    private let logger: Logger

    public init(migrations: [PostgresMigration], logger: Logger) {
        self.migrations = migrations
        self.logger = logger
    }

    /// Applies pending migrations and returns the versions this call applied (ascending).
    public func migrate(_ client: PostgresClient) async throws -> [Int] {
        let ordered = try validated()
        return try await client.withConnection { connection in
            try await connection.execute("SELECT pg_advisory_lock($1)", [Self.advisoryLockKey])
            do {
                let applied = try await applyPending(ordered, on: connection)
                try await connection.execute("SELECT pg_advisory_unlock($1)", [Self.advisoryLockKey])
                return applied
            } catch {
                // Unlock if the connection still works; a broken one loses the lock anyway.
                _ = try? await connection.execute("SELECT pg_advisory_unlock($1)", [Self.advisoryLockKey])
                throw error
            }
        }
    }

    /// Sorted migrations, or `.invalidMigrations` for duplicate versions or empty SQL.
    func validated() throws(PostgresError) -> [PostgresMigration] {
        var seen: Set<Int> = []
        for migration in migrations {
            guard seen.insert(migration.version).inserted else {
                throw PostgresError(code: .invalidMigrations, message: "duplicate migration version",
                                    context: ["pg.migration": String(migration.version)])
            }
            guard migration.version >= 0 else {
                throw PostgresError(code: .invalidMigrations, message: "negative migration version",
                                    context: ["pg.migration": String(migration.version)])
            }
        }
        return migrations.sorted { $0.version < $1.version }
    }

    private func applyPending(_ ordered: [PostgresMigration], on connection: PostgresConnection) async throws -> [Int] {
        try await connection.execute("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version bigint PRIMARY KEY,
                name text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        var done: Set<Int64> = []
        for row in try await connection.query("SELECT version FROM schema_migrations") {
            done.insert(try row.decode(Int64.self, "version"))
        }
        var applied: [Int] = []
        for migration in ordered where !done.contains(Int64(migration.version)) {
            var logger = logger
            logger[metadataKey: "pg.migration"] = "\(migration.version) \(migration.name)"
            try await connection.withTransaction { connection in
                do throws(PostgresError) {
                    try await connection.runScript(migration.sql)
                } catch var error {
                    error.context["pg.migration"] = String(migration.version)
                    throw error
                }
                try await connection.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, now())",
                                             [Int64(migration.version), migration.name])
            }
            logger.info("postgres migration applied")
            applied.append(migration.version)
        }
        return applied
    }
}
