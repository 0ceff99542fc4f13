import ServiceLogging

/// A bounded pool of libpq connections with query, transaction and health helpers.
///
/// At most `maxConnections` connections are open at once; callers beyond that wait up to
/// `acquireTimeout`, then get `.poolTimeout`. Connections that break, or are returned in
/// the middle of a transaction, are closed instead of going back to the pool.
public final class PostgresClient: Sendable {
    public let configuration: PostgresConfiguration
    private let logger: Logger
    private let pool: ConnectionPool

    public init(configuration: PostgresConfiguration, logger: Logger) {
        var logger = logger
        logger[metadataKey: "pg.application"] = configuration.applicationName
        self.configuration = configuration
        self.logger = logger
        self.pool = ConnectionPool(configuration: configuration, logger: logger)
    }

    /// Runs one parameterized statement on a pooled connection.
    public func query(_ sql: String, _ binds: [any PostgresBindable] = []) async throws(PostgresError) -> PostgresRows {
        let connection = try await pool.acquire()
        defer { pool.release(connection) }
        return try await connection.query(sql, binds)
    }

    /// Runs one parameterized statement as a prepared statement: parsed and planned once per
    /// pooled connection, and the idle connection's check and the statement in one go. For the
    /// statements a service runs over and over (its read endpoints). The statement's result
    /// columns must not change while the service runs (no `SELECT *` over a table a migration alters).
    public func queryPrepared(_ sql: String, _ binds: [any PostgresBindable] = []) async throws(PostgresError) -> PostgresRows {
        while true {
            let connection = try await pool.acquire(checkingIdleState: false)
            defer { pool.release(connection) }
            if let rows = try await connection.preparedQueryIfHealthy(sql, binds) { return rows }
            // The server closed it while it sat idle: `release` discards it; take another.
            connection.markBroken()
        }
    }

    /// Runs one parameterized statement and returns the number of affected rows.
    @discardableResult
    public func execute(_ sql: String, _ binds: [any PostgresBindable] = []) async throws(PostgresError) -> Int {
        try await query(sql, binds).affectedRows
    }

    /// Leases a connection for the duration of `body`.
    public func withConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let connection = try await pool.acquire()
        defer { pool.release(connection) }
        return try await body(connection)
    }

    /// Runs `body` in a transaction on one leased connection: COMMIT on success, ROLLBACK
    /// and the original error rethrown when `body` throws.
    public func withTransaction<T: Sendable>(
        isolation: PostgresIsolationLevel = .readCommitted,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await withConnection { connection in
            try await connection.withTransaction(isolation: isolation, body)
        }
    }

    /// Whether the database answers `SELECT 1` (for readiness checks).
    public func ping() async -> Bool {
        do {
            return try await query("SELECT 1").count == 1
        } catch {
            logger.warning("postgres ping failed", metadata: ["pg.error": error.description])
            return false
        }
    }

    /// Closes idle connections now and in-use ones when they are returned; later calls
    /// fail with `.closed`.
    public func close() async {
        await pool.close()
        logger.debug("postgres client closed")
    }

    /// Open connections right now (in use, idle or connecting); for metrics and tests.
    public var openConnections: Int { pool.openCount }
}
