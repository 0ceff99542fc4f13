import Foundation
import Postgres
import ServiceLogging

/// A fresh database for one benchmark run, dropped at the end, made through `adminURL`'s
/// server (the benchmarks' own: they depend on no test support).
public struct BenchDatabase: Sendable {
    public let adminURL: String
    public let name: String
    public let url: String

    /// The server the benchmarks make their databases on: `BENCH_DATABASE_URL`, else
    /// `TEST_DATABASE_URL` (the tests'), else a local PostgreSQL.
    public static var defaultAdminURL: String {
        let environment = ProcessInfo.processInfo.environment
        return environment["BENCH_DATABASE_URL"] ?? environment["TEST_DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/postgres"
    }

    /// A database named `prefix` and a random number.
    public static func create(adminURL: String, prefix: String) async throws -> BenchDatabase {
        let name = "\(prefix)_\(UInt32.random(in: 0...UInt32.max))"
        let admin = PostgresClient(configuration: PostgresConfiguration(url: adminURL, maxConnections: 1), logger: .disabled)
        _ = try await admin.execute("CREATE DATABASE \(name)")
        await admin.close()
        var components = URLComponents(string: adminURL)
        components?.path = "/" + name
        return BenchDatabase(adminURL: adminURL, name: name, url: components?.string ?? adminURL)
    }

    /// A client of the database.
    public func client(maxConnections: Int) -> PostgresClient {
        PostgresClient(configuration: PostgresConfiguration(url: url, maxConnections: maxConnections), logger: .disabled)
    }

    public func drop() async {
        let admin = PostgresClient(configuration: PostgresConfiguration(url: adminURL, maxConnections: 1), logger: .disabled)
        _ = try? await admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        await admin.close()
    }
}
