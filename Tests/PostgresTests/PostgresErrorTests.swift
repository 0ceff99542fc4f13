import BackboneTestSupport
import Foundation
@testable import Postgres
import ServiceLogging
import Testing

@Suite("Postgres errors and secrets")
struct PostgresErrorTests {
    @Test("redacted URLs hide the password in every connection-string form")
    func redaction() {
        #expect(PostgresConfiguration(url: "postgres://app:s3cret@db:5432/x").redactedURL == "postgres://app:***@db:5432/x")
        #expect(PostgresConfiguration(url: "postgresql://app@db/x?password=s3cret&sslmode=require").redactedURL
            == "postgresql://app@db/x?password=***&sslmode=require")
        #expect(PostgresConfiguration(url: "host=db password='s3 cret' user=app").redactedURL == "host=db password='***' user=app")
        #expect(PostgresConfiguration(url: "host=db password=s3cret user=app").redactedURL == "host=db password=*** user=app")
        #expect(PostgresConfiguration(url: "postgres://app@db/x").redactedURL == "postgres://app@db/x")
    }

    @Test("a failed connection reports a typed, retriable error without the password")
    func connectionFailure() async {
        let sink = LogSink.inMemory()
        let logger = Logger(label: "test", level: .trace, sink: sink)
        let client = PostgresClient(
            configuration: PostgresConfiguration(url: "postgres://app:Sup3rS3cret@127.0.0.1:1/db", connectTimeout: .seconds(2)),
            logger: logger)
        do {
            _ = try await client.query("SELECT 'marker-sql-text'")
            Issue.record("query against a closed port succeeded")
        } catch {
            #expect(error.code == .connectionFailed)
            #expect(error.isRetriable)
            #expect(!error.description.contains("Sup3rS3cret"))
            #expect(!error.description.contains("marker-sql-text"))
        }
        #expect(await client.ping() == false)
        #expect(!sink.lines.joined().contains("Sup3rS3cret"))
        #expect(client.openConnections == 0)
        await client.close()
    }

    @Test("retriability follows SQLSTATE: serialization failures and deadlocks retry, constraint violations do not")
    func retriable() {
        #expect(PostgresError(code: .queryFailed, sqlState: "40001", message: "x").isRetriable)
        #expect(PostgresError(code: .queryFailed, sqlState: "40P01", message: "x").isRetriable)
        #expect(PostgresError(code: .queryFailed, sqlState: "57P01", message: "x").isRetriable)
        #expect(PostgresError(code: .poolTimeout, message: "x").isRetriable)
        #expect(!PostgresError(code: .queryFailed, sqlState: "23505", message: "x").isRetriable)
        #expect(!PostgresError(code: .decoding, message: "x").isRetriable)
    }

    @Test("duplicate migration versions are rejected before any database access")
    func duplicateMigrations() async {
        let client = PostgresClient(configuration: PostgresConfiguration(url: "postgres://app@127.0.0.1:1/db"), logger: .disabled)
        let migrator = PostgresMigrator(migrations: [
            PostgresMigration(version: 1, name: "a", sql: "SELECT 1"),
            PostgresMigration(version: 1, name: "b", sql: "SELECT 2"),
        ], logger: .disabled)
        await #expect(throws: PostgresError.self) { try await migrator.migrate(client) }
        do {
            _ = try await migrator.migrate(client)
        } catch let error as PostgresError {
            #expect(error.code == .invalidMigrations)
        } catch {
            Issue.record("unexpected error \(error)")
        }
        #expect(client.openConnections == 0)
        await client.close()
    }
}

@Suite("Postgres errors do not quote input", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(2)))
struct PostgresErrorQuotingTests {
    @Test("a value the server quotes back (22P02, 23505) is in debugDescription, never in description")
    func quotedInput() async throws {
        let client = TestPostgres.client(maxConnections: 1)
        do {
            _ = try await client.query("SELECT $1::uuid AS id", ["personal-value-4711"])
            Issue.record("an invalid uuid was accepted")
        } catch {
            #expect(error.sqlState == "22P02")
            #expect(!error.description.contains("personal-value-4711"))
            #expect(!"\(error)".contains("personal-value-4711"))
            #expect(String(reflecting: error).contains("personal-value-4711"))
        }
        await client.close()
        let local = PostgresError(code: .decoding, message: "cannot decode Int", context: ["pg.column": "n"])
        #expect(local.description.contains("cannot decode Int") && local.description.contains("pg.column=n"))
    }
}
