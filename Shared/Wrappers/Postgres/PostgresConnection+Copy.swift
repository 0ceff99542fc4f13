internal import CLibPQ

extension PostgresConnection {
    /// Bulk-loads `rows` with `COPY table (columns) FROM STDIN` (text format) and returns
    /// the number of rows copied. Values use their `postgresText`, escaped for COPY;
    /// `nil` texts become NULL. Table and column names are quoted identifiers
    /// (`schema.table` is split at the dot).
    public func copy(into table: String, columns: [String], rows: [[any PostgresBindable]]) async throws(PostgresError) -> Int {
        guard !columns.isEmpty else {
            throw PostgresError(code: .copyFailed, message: "COPY needs at least one column", context: ["pg.table": table])
        }
        if let bad = rows.firstIndex(where: { $0.count != columns.count }) {
            throw PostgresError(code: .copyFailed,
                                message: "row \(bad) has \(rows[bad].count) values for \(columns.count) columns",
                                context: ["pg.table": table])
        }
        return try await run { (connection: PostgresConnection, handle: OpaquePointer) throws(PostgresError) -> Int in
            var quotedColumns: [String] = []
            for column in columns { quotedColumns.append(try connection.quoteIdentifier(column, handle: handle)) }
            let target = try connection.quoteIdentifier(table, handle: handle)
            let statement = "COPY \(target) (\(quotedColumns.joined(separator: ", "))) FROM STDIN"
            let start = try connection.check(PQexec(handle, statement), handle: handle, accepting: [PGRES_COPY_IN])
            _ = start
            return try connection.streamCopy(rows, handle: handle, table: table)
        }
    }

    /// Bulk-loads rows written with `PostgresCopyRows` (`COPY table (columns) FROM STDIN`,
    /// text format) and returns the number of rows copied.
    public func copy(into table: String, columns: [String], rows: PostgresCopyRows) async throws(PostgresError) -> Int {
        guard !columns.isEmpty else {
            throw PostgresError(code: .copyFailed, message: "COPY needs at least one column", context: ["pg.table": table])
        }
        if rows.count > 0, rows.fieldsPerRow != columns.count {
            throw PostgresError(code: .copyFailed,
                                message: "rows do not all have \(columns.count) values (\(rows.fieldsPerRow.map(String.init) ?? "uneven rows"))",
                                context: ["pg.table": table])
        }
        let bytes = rows.bytes
        return try await run { (connection: PostgresConnection, handle: OpaquePointer) throws(PostgresError) -> Int in
            var quotedColumns: [String] = []
            for column in columns { quotedColumns.append(try connection.quoteIdentifier(column, handle: handle)) }
            let target = try connection.quoteIdentifier(table, handle: handle)
            let statement = "COPY \(target) (\(quotedColumns.joined(separator: ", "))) FROM STDIN"
            _ = try connection.check(PQexec(handle, statement), handle: handle, accepting: [PGRES_COPY_IN])
            var sendFailed = false
            bytes.withUnsafeBufferPointer { all in
                all.withMemoryRebound(to: CChar.self) { all in
                    var start = 0
                    while start < all.count, !sendFailed {
                        let end = min(start + Self.copyChunkSize, all.count)
                        if PQputCopyData(handle, all.baseAddress! + start, Int32(end - start)) != 1 { sendFailed = true }
                        start = end
                    }
                }
            }
            return try connection.finishCopy(handle: handle, table: table, sendFailed: sendFailed)
        }
    }

    private static let copyChunkSize = 256 * 1024

    /// Sends the rows in chunks, ends the stream, and reads the final result.
    private func streamCopy(_ rows: [[any PostgresBindable]], handle: OpaquePointer, table: String) throws(PostgresError) -> Int {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(Self.copyChunkSize + 4096)
        var sendFailed = false
        func flush() {
            guard !buffer.isEmpty, !sendFailed else { return }
            let sent = buffer.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { PQputCopyData(handle, $0.baseAddress, Int32($0.count)) }
            }
            if sent != 1 { sendFailed = true }
            buffer.removeAll(keepingCapacity: true)
        }
        for row in rows {
            CopyText.appendRow(row, to: &buffer)
            if buffer.count >= Self.copyChunkSize { flush() }
            if sendFailed { break }
        }
        flush()
        return try finishCopy(handle: handle, table: table, sendFailed: sendFailed)
    }

    /// Ends the COPY stream and reads the final result.
    private func finishCopy(handle: OpaquePointer, table: String, sendFailed: Bool) throws(PostgresError) -> Int {
        var sendFailed = sendFailed
        if PQputCopyEnd(handle, nil) != 1 { sendFailed = true }
        // Drain every result so the connection returns to the idle state.
        var outcome: Result<Int, PostgresError>? = nil
        while let raw = PQgetResult(handle) {
            let result = Result { () throws(PostgresError) -> QueryResult in try check(raw, handle: handle) }
            if outcome == nil { outcome = result.map(\.affectedRows) }
        }
        switch outcome {
        case .success(let count)? where !sendFailed:
            return count
        case .failure(var error)?:
            error.code = error.code == .queryFailed ? .copyFailed : error.code
            error.context["pg.table"] = table
            throw error
        default:
            var error = connectionError(handle)
            error.code = error.code == .queryFailed ? .copyFailed : error.code
            error.context["pg.table"] = table
            throw error
        }
    }
}
