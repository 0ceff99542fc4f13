import Foundation
import Postgres
import ServiceLogging

/// The database of the stored positions and replay records (`DATABASE_URL` from the
/// environment or `.backbone/dev.env`).
enum DatabaseSettings {
    /// Runs `body` with a client of `DATABASE_URL`, closed on every path; database errors
    /// name the fix (see `guarded`).
    static func with<T>(applicationName: String, logger: Logger, _ body: (PostgresClient) async throws -> T) async throws -> T {
        let client = try client(applicationName: applicationName, logger: logger)
        do {
            let result = try await guarded(client) { try await body(client) }
            await client.close()
            return result
        } catch {
            await client.close()
            throw error
        }
    }

    /// `DATABASE_URL`, or a usage error that says where to get one.
    static func url(in environment: [String: String] = DevEnvironment.resolved()) throws -> String {
        guard let url = environment["DATABASE_URL"], !url.isEmpty else {
            throw CommandLineArguments.UsageError(description: "DATABASE_URL is not set (export it, or start `backbone dev`)")
        }
        return url
    }

    static func client(applicationName: String, logger: Logger) throws -> PostgresClient {
        let url = try url()
        var quiet = logger
        if ProcessInfo.processInfo.environment["LOG_LEVEL"] == nil { quiet.logLevel = .critical }
        return PostgresClient(configuration: PostgresConfiguration(url: url, maxConnections: 2, applicationName: applicationName),
                              logger: quiet)
    }

    /// Runs `body`, turning a database that cannot be reached or lacks the tables into an
    /// error that names the fix.
    static func guarded<T>(_ client: PostgresClient, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PostgresError {
            if error.sqlState == "42P01" {
                throw CommandError(code: .databaseUnavailable,
                                   message: "the database has no projection tables yet — run `backbone migrate` (or start the services once)",
                                   context: "DATABASE_URL")
            }
            throw CommandError(code: .databaseUnavailable, message: "\(error) — is PostgreSQL running (start it with `backbone dev`)?",
                               context: "DATABASE_URL", isRetriable: error.isRetriable)
        }
    }
}
