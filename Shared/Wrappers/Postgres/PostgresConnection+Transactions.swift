import ServiceLogging

/// Transaction isolation levels for `withTransaction`.
public enum PostgresIsolationLevel: Sendable {
    case readCommitted, repeatableRead, serializable

    var sql: String {
        switch self {
        case .readCommitted: "READ COMMITTED"
        case .repeatableRead: "REPEATABLE READ"
        case .serializable: "SERIALIZABLE"
        }
    }
}

extension PostgresConnection {
    /// Runs `body` between BEGIN and COMMIT. When `body` throws, the transaction is rolled
    /// back and the original error is rethrown. A COMMIT that the server turns into a
    /// ROLLBACK (the transaction had failed) throws `.transactionAborted`.
    public func withTransaction<T: Sendable>(
        isolation: PostgresIsolationLevel = .readCommitted,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await execute("BEGIN ISOLATION LEVEL \(isolation.sql)")
        let value: T
        do {
            value = try await body(self)
        } catch {
            await rollback("ROLLBACK")
            throw error
        }
        // Not cancellable: a cancel racing COMMIT would leave the outcome ambiguous.
        let commit = try await query("COMMIT", [], cancellable: false)
        if commit.commandTag == "ROLLBACK" {
            throw PostgresError(code: .transactionAborted,
                                message: "the transaction had failed and was rolled back instead of committed")
        }
        return value
    }

    /// Runs `body` inside a SAVEPOINT (within an open transaction); on error rolls back to
    /// the savepoint, keeping the outer transaction usable, and rethrows.
    public func withSavepoint<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let name = "backbone_savepoint_\(nextSavepoint())"
        try await execute("SAVEPOINT \(name)")
        let value: T
        do {
            value = try await body(self)
        } catch {
            await rollback("ROLLBACK TO SAVEPOINT \(name)")
            throw error
        }
        try await execute("RELEASE SAVEPOINT \(name)")
        return value
    }

    /// Best effort: a failed rollback means the connection state is unknown, so it is
    /// marked broken and the pool discards it.
    private func rollback(_ statement: String) async {
        do {
            _ = try await query(statement, [], cancellable: false)
        } catch {
            markBroken()
            logger.warning("postgres rollback failed", metadata: ["pg.error": error.description])
        }
    }
}
