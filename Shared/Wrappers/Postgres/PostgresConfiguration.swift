import Lifecycle

/// How a `PostgresClient` connects and sizes its pool.
public struct PostgresConfiguration: Sendable {
    /// A libpq connection string: `postgres://user:pass@host:port/db?…` or `host=… dbname=…`.
    public var url: String
    /// Upper bound on open connections (in use + idle).
    public var maxConnections: Int
    /// How long opening one connection may take (libpq `connect_timeout`, whole seconds, min 2).
    public var connectTimeout: Duration
    /// How long a caller waits for a free pooled connection before `.poolTimeout`.
    public var acquireTimeout: Duration
    /// Reported to the server as `application_name` (visible in `pg_stat_activity`).
    public var applicationName: String

    public init(
        url: String,
        maxConnections: Int = 10,
        connectTimeout: Duration = .seconds(10),
        acquireTimeout: Duration = .seconds(10),
        applicationName: String = "backbone"
    ) {
        self.url = url
        self.maxConnections = max(1, maxConnections)
        self.connectTimeout = connectTimeout
        self.acquireTimeout = acquireTimeout
        self.applicationName = applicationName
    }

    /// The URL with any password replaced by `***`, safe to log.
    public var redactedURL: String { ConnectionStringRedactor.redact(url) }

    /// The password in the URL, if any (used to scrub server messages); never logged.
    var password: String? { ConnectionStringRedactor.password(in: url) }

    var connectTimeoutSeconds: Int {
        Int(max(2, connectTimeout.timeInterval.rounded(.up)))
    }
}
