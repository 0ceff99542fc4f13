import Postgres

/// A projection's event log, keyed by `event_id`: the record of which events a read model
/// already holds, so a replayed or resent event is applied once.
///
/// The usual batch holds only new events: they are COPYed straight into the log inside a
/// savepoint, and the log's primary key checks them. When some were logged before (a batch
/// replayed after a crash, a resent event) that COPY fails with a unique violation and is
/// rolled back to the savepoint; the batch then goes through a per-connection staging table
/// and `INSERT … ON CONFLICT DO NOTHING`, which answers the ids that were already there.
public struct EventLog: Sendable {
    /// The log table (found on the connection's search path, so a shadow schema works).
    public let table: String
    /// The columns filled from a batch, in COPY order; the first is `event_id`.
    public let columns: [String]
    private let createStaging: String
    private let moveStaged: String
    private let stagingTable: String

    /// `columns`: name and SQL type of each column a batch fills, in COPY order, `event_id` first.
    public init(table: String, stagingTable: String, columns: [(name: String, type: String)]) {
        precondition(columns.first?.name == "event_id", "an event log's first column is event_id")
        self.table = table
        self.stagingTable = stagingTable
        self.columns = columns.map(\.name)
        let list = self.columns.joined(separator: ", ")
        createStaging = """
            CREATE TEMPORARY TABLE IF NOT EXISTS \(stagingTable) (
                \(columns.map { "\($0.name) \($0.type) NOT NULL" }.joined(separator: ", "))
            ) ON COMMIT DELETE ROWS
            """
        // The staging table is emptied by the same statement (and by every commit), so
        // nothing staged is ever seen twice.
        moveStaged = """
            WITH staged AS (
                DELETE FROM \(stagingTable) RETURNING \(list)
            ), inserted AS (
                INSERT INTO \(table) (\(list))
                SELECT \(list) FROM staged
                ON CONFLICT (event_id) DO NOTHING
                RETURNING event_id
            )
            SELECT DISTINCT s.event_id FROM staged s
            WHERE NOT EXISTS (SELECT 1 FROM inserted i WHERE i.event_id = s.event_id)
            """
    }

    /// Logs the rows (distinct event ids, in `columns` order) in the connection's open
    /// transaction; returns the ids that were logged before (empty in the usual case).
    public func insert(_ rows: PostgresCopyRows, in connection: PostgresConnection) async throws -> Set<String> {
        do {
            try await connection.withSavepoint { connection in
                _ = try await connection.copy(into: table, columns: columns, rows: rows)
            }
            return []
        } catch let error as PostgresError where error.isUniqueViolation {
            // Some events are in the log already: answered below.
        }
        // Rare (replays), so the staging table is simply ensured each time: it lives as long
        // as the connection, unless the transaction that created it rolled back.
        try await connection.execute(createStaging)
        _ = try await connection.copy(into: stagingTable, columns: columns, rows: rows)
        var known = Set<String>()
        for row in try await connection.query(moveStaged) { known.insert(try row.decode(String.self, 0)) }
        return known
    }
}
