import Foundation
import Postgres
import ServiceLogging

/// `backbone migrate`: applies every service's migrations to `DATABASE_URL` (from the
/// environment or `.backbone/dev.env`), once, under an advisory lock.
enum MigrateCommand {
    static func run(_ arguments: [String], logger: Logger) async throws -> Int32 {
        let args = try CommandLineArguments(arguments, valued: [])
        try args.only([])
        guard let url = DevEnvironment.resolved()["DATABASE_URL"], !url.isEmpty else {
            throw CommandLineArguments.UsageError(description: "DATABASE_URL is not set (export it, or start `backbone dev`)")
        }
        let client = PostgresClient(configuration: PostgresConfiguration(url: url, maxConnections: 2, applicationName: "backbone-migrate"),
                                    logger: logger)
        let applied = try await PostgresMigrator(migrations: ServiceCatalog.allMigrations, logger: logger).migrate(client)
        await client.close()
        print(applied.isEmpty ? "database is up to date" : "applied migrations: " + applied.map(String.init).joined(separator: ", "))
        return 0
    }
}
