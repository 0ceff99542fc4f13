import Dispatch
import Foundation
import ServiceLogging
import Synchronization
internal import CLibPQ

/// One libpq connection. Statements are sent and their answers read from the calling task's
/// own thread with libpq's asynchronous calls, which never block: while the answer is on its
/// way the task waits on `SocketReadiness`, not on a thread. The calls that block (connecting,
/// COPY, scripts, closing) run on the connection's own serial `DispatchQueue`, never on the
/// cooperative thread pool; callers await them through a continuation.
///
/// Usually leased from a `PostgresClient`; `connect(configuration:logger:)` opens a
/// standalone one (the caller then owns it and calls `close()`).
// @unchecked Sendable: `handle` and `preparedStatements` are used by one holder at a time —
// the task that leased the connection (or owns it), directly or through `queue` (serial), whose
// work it awaits — and in `deinit`, when no other reference exists; the pool touches an idle
// connection only before leasing it. The remaining mutable state is in a Mutex.
public final class PostgresConnection: @unchecked Sendable {
    struct Status {
        var broken = false
        var closed = false
        var transactionIdle = true
        var savepoints = 0
    }

    private static let counter = Atomic<Int>(0)

    /// A process-unique number, used in logs (`pg.connection`).
    public let id: Int
    let logger: Logger
    private let queue: DispatchQueue
    private var handle: OpaquePointer?
    private let secret: String?
    private let status = Mutex(Status())
    private let notices: NoticeLogger
    private let canceller: QueryCanceller
    /// SQL text → name of the statement prepared for it on this connection.
    private var preparedStatements: [String: String] = [:]
    /// More distinct statements than this run unprepared (bounds the server-side memory).
    static let maxPreparedStatements = 64

    private init(handle: OpaquePointer, queue: DispatchQueue, id: Int, secret: String?, logger: Logger) {
        self.notices = NoticeLogger(logger: logger)
        notices.install(on: handle)
        self.canceller = QueryCanceller(token: PQgetCancel(handle))
        self.handle = handle
        self.queue = queue
        self.id = id
        self.secret = secret
        self.logger = logger
    }

    deinit {
        if let handle { PQfinish(handle) }
    }

    /// Opens a connection (blocking work runs on the connection's own queue).
    public static func connect(configuration: PostgresConfiguration, logger: Logger) async throws(PostgresError) -> PostgresConnection {
        let id = counter.wrappingAdd(1, ordering: .relaxed).newValue
        let logger = {
            var logger = logger
            logger[metadataKey: "pg.connection"] = String(id)
            return logger
        }()
        let queue = DispatchQueue(label: "postgres.connection.\(id)")
        let secret = configuration.password
        let result: Result<PostgresConnection, PostgresError> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Result { () throws(PostgresError) -> PostgresConnection in
                    let handle = try openHandle(configuration)
                    return PostgresConnection(handle: handle, queue: queue, id: id, secret: secret, logger: logger)
                })
            }
        }
        switch result {
        case .success(let connection):
            logger.debug("postgres connection opened", metadata: ["pg.url": configuration.redactedURL])
            return connection
        case .failure(let error):
            logger.warning("postgres connection failed",
                           metadata: ["pg.url": configuration.redactedURL, "pg.error": error.description])
            throw error
        }
    }

    private static func openHandle(_ configuration: PostgresConfiguration) throws(PostgresError) -> OpaquePointer {
        let keywords = ["dbname", "application_name", "connect_timeout", "client_encoding"]
        let values = [configuration.url, configuration.applicationName,
                      String(configuration.connectTimeoutSeconds), "UTF8"]
        let handle = CStringArray(keywords).withPointers { keywordPointers in
            CStringArray(values).withPointers { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let handle else {
            throw PostgresError(code: .connectionFailed, message: "out of memory opening a connection")
        }
        guard backbone_pq_connection_ok(handle) != 0 else {
            let message = ConnectionStringRedactor.scrub(
                Self.trimmed(String(cString: PQerrorMessage(handle))), secret: configuration.password)
            PQfinish(handle)
            throw PostgresError(code: .connectionFailed, message: message)
        }
        // Fixed session settings the text decoders rely on.
        let setup = PQexec(handle, "SET DateStyle = 'ISO'; SET TimeZone = 'UTC'; SET bytea_output = 'hex'")
        defer { PQclear(setup) }
        guard let setup, PQresultStatus(setup) == PGRES_COMMAND_OK else {
            PQfinish(handle)
            throw PostgresError(code: .connectionFailed, message: "could not apply session settings")
        }
        return handle
    }

    // MARK: - Queries

    /// Runs one parameterized statement (`$1`, `$2`, … bound from `binds`, text format).
    /// Cancelling the awaiting task cancels the statement on the server (SQLSTATE 57014).
    public func query(_ sql: String, _ binds: [any PostgresBindable] = []) async throws(PostgresError) -> PostgresRows {
        try await query(sql, binds, cancellable: true)
    }

    func query(_ sql: String, _ binds: [any PostgresBindable], cancellable: Bool) async throws(PostgresError) -> PostgresRows {
        let parameters = binds.map(\.postgresText)
        return PostgresRows(result: try await exchange(cancellable: cancellable) { handle in
            CStringArray(parameters).withPointers { pointers in
                PQsendQueryParams(handle, sql, Int32(parameters.count), nil, pointers, nil, nil, 0)
            }
        })
    }

    /// Runs one parameterized statement as a prepared statement of this connection (parsed
    /// and planned on its first use here), after reading what the server sent while the
    /// connection sat idle. `nil` when that shows the connection broken (the statement did not
    /// run; the pool discards the connection).
    func preparedQueryIfHealthy(_ sql: String, _ binds: [any PostgresBindable]) async throws(PostgresError) -> PostgresRows? {
        guard let handle else { throw .closed("the connection is closed") }
        guard Self.drainIdleInput(handle) else { return nil }
        return try await queryPrepared(sql, binds)
    }

    /// Runs one parameterized statement as a prepared statement of this connection (parsed and
    /// planned once here, then bound and run): for the fixed statements run in every batch of a
    /// transaction (a projection's writes, its positions, the erasure fence), whose parsing and
    /// planning cost PostgreSQL more than running them. Same rules as `PostgresClient.queryPrepared`.
    public func queryPrepared(_ sql: String, _ binds: [any PostgresBindable] = []) async throws(PostgresError) -> PostgresRows {
        let parameters = binds.map(\.postgresText)
        let count = Int32(parameters.count)
        if let name = try await preparedName(for: sql, parameterCount: count) {
            return PostgresRows(result: try await exchange(cancellable: true) { handle in
                CStringArray(parameters).withPointers { PQsendQueryPrepared(handle, name, count, $0, nil, nil, 0) }
            })
        }
        return try await query(sql, binds, cancellable: true)
    }

    /// `queryPrepared`, returning the number of affected rows.
    @discardableResult
    public func executePrepared(_ sql: String, _ binds: [any PostgresBindable] = []) async throws(PostgresError) -> Int {
        try await queryPrepared(sql, binds).affectedRows
    }

    /// The name of the statement prepared for `sql` (preparing it now if needed), or `nil`
    /// once `maxPreparedStatements` are prepared.
    private func preparedName(for sql: String, parameterCount: Int32) async throws(PostgresError) -> String? {
        if let name = preparedStatements[sql] { return name }
        guard preparedStatements.count < Self.maxPreparedStatements else { return nil }
        let name = "backbone_\(preparedStatements.count + 1)"
        _ = try await exchange(cancellable: true) { PQsendPrepare($0, name, sql, parameterCount, nil) }
        preparedStatements[sql] = name
        return name
    }

    /// Runs one parameterized statement and returns the number of affected rows.
    @discardableResult
    public func execute(_ sql: String, _ binds: [any PostgresBindable] = []) async throws(PostgresError) -> Int {
        try await query(sql, binds).affectedRows
    }

    /// Closes the connection. Further calls fail with `.closed`.
    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.finish()
                continuation.resume()
            }
        }
    }

    /// Closes without waiting (used by the pool when discarding a connection).
    func closeInBackground() {
        queue.async { self.finish() }
    }

    private func finish() {
        canceller.invalidate()
        if let handle { PQfinish(handle) }
        handle = nil
        status.withLock { $0.closed = true }
        logger.debug("postgres connection closed")
    }

    /// Whether the pool may hand this connection to someone else: open, healthy and idle.
    var isReusable: Bool {
        status.withLock { !$0.broken && !$0.closed && $0.transactionIdle }
    }

    /// Reads whatever the server sent while the connection sat idle (non-blocking), so a
    /// connection the server has closed is seen as broken before it is handed out.
    /// Runs on the caller's thread: it never blocks (libpq's socket is non-blocking; a read that
    /// finds nothing returns at once), and the connection is not leased to anyone yet.
    func refreshIdleState() {
        guard let handle else { return }
        if !Self.drainIdleInput(handle) { markBroken() }
    }

    /// Reads what arrived while idle; whether the connection is still usable. On `queue` only.
    /// A healthy idle connection has nothing to read: one `poll` tells, where three reads that
    /// each found nothing cost a statement three system calls.
    private static func drainIdleInput(_ handle: OpaquePointer) -> Bool {
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        if descriptor.fd >= 0, poll(&descriptor, 1, 0) == 0 { return backbone_pq_connection_ok(handle) != 0 }
        // A terminated backend sends a FATAL message and then closes: the first read
        // drains the message, a later one sees the EOF and marks the connection bad.
        for _ in 0..<3 where PQconsumeInput(handle) == 0 { return false }
        return backbone_pq_connection_ok(handle) != 0
    }

    func markBroken() { status.withLock { $0.broken = true } }

    func nextSavepoint() -> Int { status.withLock { $0.savepoints += 1; return $0.savepoints } }

    // MARK: - Running a statement from the task's thread

    /// Sends one statement with `send` (a `PQsend…` call) and returns its result, from the
    /// calling task's thread: libpq is put in non-blocking mode for the exchange, and whenever it
    /// would block the task waits on `SocketReadiness`. With `cancellable`, cancelling the
    /// awaiting task cancels the statement on the server.
    func exchange(
        cancellable: Bool, _ send: (OpaquePointer) -> Int32
    ) async throws(PostgresError) -> QueryResult {
        guard let handle else { throw .closed("the connection is closed") }
        let operation = canceller.makeOperationID()
        let result = await withTaskCancellationHandler { () async -> Result<QueryResult, PostgresError> in
            if cancellable, !canceller.begin(operation) {
                return .failure(PostgresError(code: .cancelled, message: "the statement was cancelled before it started"))
            }
            defer { if cancellable { canceller.end(operation) } }
            do throws(PostgresError) {
                return .success(try await roundTrip(handle, send))
            } catch {
                return .failure(error)
            }
        } onCancel: {
            if cancellable { canceller.cancel(operation) }
        }
        recordHealth(handle)
        return try result.get()
    }

    private func roundTrip(_ handle: OpaquePointer, _ send: (OpaquePointer) -> Int32) async throws(PostgresError) -> QueryResult {
        guard PQsetnonblocking(handle, 1) == 0 else { throw connectionError(handle) }
        defer { _ = PQsetnonblocking(handle, 0) }
        guard send(handle) == 1 else { throw connectionError(handle) }
        let socket = PQsocket(handle)
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { break }
            guard flushed == 1 else { throw connectionError(handle) }
            await SocketReadiness.shared.wait(socket, for: .writable)
        }
        var last: OpaquePointer?
        while true {
            while PQisBusy(handle) != 0 {
                await SocketReadiness.shared.wait(socket, for: .readable)
                guard PQconsumeInput(handle) == 1 else {
                    if let last { PQclear(last) }
                    throw connectionError(handle)
                }
            }
            guard let next = PQgetResult(handle) else { break }
            // One statement gives one result; of several (an error after rows), the last tells.
            if let last { PQclear(last) }
            last = next
        }
        return try check(last, handle: handle)
    }

    /// Records whether the connection is still usable and outside a transaction.
    private func recordHealth(_ handle: OpaquePointer) {
        let healthy = backbone_pq_connection_ok(handle) != 0
        let idle = backbone_pq_transaction_idle(handle) != 0
        status.withLock { status in
            if !healthy { status.broken = true }
            status.transactionIdle = idle
        }
    }

    // MARK: - Running blocking work on the queue

    /// Runs `work` on the connection's queue with the live handle, then records health.
    /// With `cancellable`, cancelling the awaiting task cancels the running statement.
    func run<T: Sendable>(
        cancellable: Bool = true,
        _ work: @escaping @Sendable (PostgresConnection, OpaquePointer) throws(PostgresError) -> T
    ) async throws(PostgresError) -> T {
        let operation = canceller.makeOperationID()
        let result: Result<T, PostgresError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                queue.async { continuation.resume(returning: self.perform(operation, cancellable: cancellable, work)) }
            }
        } onCancel: {
            if cancellable { self.canceller.cancel(operation) }
        }
        return try result.get()
    }

    /// The queue-side half of `run`.
    private func perform<T: Sendable>(
        _ operation: UInt64, cancellable: Bool,
        _ work: @Sendable (PostgresConnection, OpaquePointer) throws(PostgresError) -> T
    ) -> Result<T, PostgresError> {
        guard let handle = self.handle else {
            return .failure(.closed("the connection is closed"))
        }
        if cancellable, !canceller.begin(operation) {
            return .failure(PostgresError(code: .cancelled, message: "the statement was cancelled before it started"))
        }
        let result = Result { () throws(PostgresError) -> T in try work(self, handle) }
        if cancellable { canceller.end(operation) }
        recordHealth(handle)
        return result
    }

    /// Converts a `PGresult` into rows or a typed error; clears it on failure.
    func check(_ raw: OpaquePointer?, handle: OpaquePointer, accepting accepted: [ExecStatusType] = []) throws(PostgresError) -> QueryResult {
        guard let raw else { throw connectionError(handle) }
        let state = PQresultStatus(raw)
        if state == PGRES_COMMAND_OK || state == PGRES_TUPLES_OK || accepted.contains(state) {
            return QueryResult(raw)
        }
        defer { PQclear(raw) }
        let sqlState = backbone_pq_sqlstate(raw).map { String(cString: $0) }
        var message = backbone_pq_primary_message(raw).map { String(cString: $0) }
            ?? Self.trimmed(String(cString: PQresultErrorMessage(raw)))
        message = ConnectionStringRedactor.scrub(message, secret: secret)
        let lost = backbone_pq_connection_ok(handle) == 0
        return try { () throws(PostgresError) -> QueryResult in
            throw PostgresError(code: lost ? .connectionLost : .queryFailed, sqlState: sqlState, message: message)
        }()
    }

    func connectionError(_ handle: OpaquePointer) -> PostgresError {
        let message = ConnectionStringRedactor.scrub(Self.trimmed(String(cString: PQerrorMessage(handle))), secret: secret)
        let lost = backbone_pq_connection_ok(handle) == 0
        return PostgresError(code: lost ? .connectionLost : .queryFailed, message: message.isEmpty ? "no result" : message)
    }

    /// Quotes an identifier with libpq (`"my table"`); dotted names are quoted per part.
    func quoteIdentifier(_ name: String, handle: OpaquePointer) throws(PostgresError) -> String {
        var parts: [String] = []
        for part in name.split(separator: ".", omittingEmptySubsequences: false) {
            let utf8 = Array(part.utf8)
            guard let escaped = utf8.withUnsafeBufferPointer({ buffer in
                buffer.withMemoryRebound(to: CChar.self) { PQescapeIdentifier(handle, $0.baseAddress, $0.count) }
            }) else {
                throw PostgresError(code: .queryFailed, message: "invalid identifier")
            }
            parts.append(String(cString: escaped))
            PQfreemem(escaped)
        }
        return parts.joined(separator: ".")
    }

    static func trimmed(_ text: String) -> String {
        text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

extension PostgresConnection {
    /// Runs SQL text that may hold several statements and no parameters (simple query
    /// protocol), e.g. a migration script. Never put values into such text.
    public func runScript(_ sql: String) async throws(PostgresError) {
        _ = try await run { (connection: PostgresConnection, handle: OpaquePointer) throws(PostgresError) -> Int in
            // PQexec returns the last statement's result; an error stops the script there.
            let result = try connection.check(PQexec(handle, sql), handle: handle)
            return result.affectedRows
        }
    }
}
