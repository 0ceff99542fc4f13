/// An error from the Postgres module.
///
/// `description` carries the code, the SQLSTATE and the context only — never the SQL text,
/// bound values or connection secrets. A server's message can quote bound input (SQLSTATE
/// 22P02 `invalid input syntax for type uuid: "…"`, 23505's key values, 42601's SQL
/// fragment), so for errors the server reported it appears only in `debugDescription`
/// (`String(reflecting:)`), as in postgres-nio; module-written messages stay in `description`.
public struct PostgresError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What kind of failure this is. Extensible: new codes are new static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Could not open a connection (server down, authentication, bad URL).
        public static let connectionFailed = Code("connectionFailed")
        /// An open connection broke while in use.
        public static let connectionLost = Code("connectionLost")
        /// The server rejected a statement; see `sqlState`.
        public static let queryFailed = Code("queryFailed")
        /// No pooled connection became free within `acquireTimeout`.
        public static let poolTimeout = Code("poolTimeout")
        /// A column value could not be decoded into the requested Swift type.
        public static let decoding = Code("decoding")
        /// The client or connection was closed.
        public static let closed = Code("closed")
        /// A COPY FROM STDIN stream failed.
        public static let copyFailed = Code("copyFailed")
        /// A transaction ended in ROLLBACK although COMMIT was requested.
        public static let transactionAborted = Code("transactionAborted")
        /// The migration list is invalid (e.g. duplicate versions).
        public static let invalidMigrations = Code("invalidMigrations")
        /// The waiting task was cancelled.
        public static let cancelled = Code("cancelled")
    }

    public var code: Code
    /// The five-character SQLSTATE reported by the server (`23505` unique_violation, …).
    public var sqlState: String?
    /// The server's primary message (may quote bound input: debugging only), or a
    /// module-written explanation.
    public var message: String
    /// Extra non-secret context (`pg.column`, `pg.table`, `pg.migration`, …).
    public var context: [String: String]

    public init(code: Code, sqlState: String? = nil, message: String, context: [String: String] = [:]) {
        self.code = code
        self.sqlState = sqlState
        self.message = message
        self.context = context
    }

    /// Whether retrying the whole unit of work may succeed: lost connections, pool
    /// exhaustion, serialization failures, deadlocks and administrator shutdowns.
    public var isRetriable: Bool {
        switch code {
        case .connectionLost, .connectionFailed, .poolTimeout:
            return true
        default:
            guard let sqlState else { return false }
            return Self.retriableStates.contains(sqlState) || sqlState.hasPrefix("08")
        }
    }

    static let retriableStates: Set<String> = ["40001", "40P01", "57P01", "57P02", "57P03"]

    /// Safe to log and to show: the server's message is left out (see the type's comment).
    public var description: String { render(includingServerMessage: false) }

    /// Everything, the server's message included: for a developer's eyes, not for logs.
    public var debugDescription: String { render(includingServerMessage: true) }

    private func render(includingServerMessage: Bool) -> String {
        var text = "PostgresError(\(code)"
        if let sqlState { text += ", sqlState: \(sqlState)" }
        text += ")"
        if sqlState == nil || includingServerMessage {
            text += ": \(message)"
        } else {
            text += ": the server rejected the statement (message withheld: it may quote input)"
        }
        for (key, value) in context.sorted(by: { $0.key < $1.key }) { text += " [\(key)=\(value)]" }
        return text
    }

    /// Unique violation (`23505`).
    public var isUniqueViolation: Bool { sqlState == "23505" }
}

extension PostgresError {
    static func closed(_ what: String = "the client is closed") -> PostgresError {
        PostgresError(code: .closed, message: what)
    }

    @usableFromInline
    static func decoding(column: String, type: Any.Type, reason: String) -> PostgresError {
        PostgresError(code: .decoding, message: "cannot decode \(type): \(reason)", context: ["pg.column": column])
    }
}
