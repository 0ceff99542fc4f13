import BackboneTestSupport
import Foundation
import Postgres
import ServiceLogging
import Testing

/// The database the suites use: `TEST_DATABASE_URL` (set by `deploy/test.sh`); whether they run
/// at all is the one switch every suite reads, `Integration.isEnabled`.
enum TestPostgres {
    static var url: String {
        ProcessInfo.processInfo.environment["TEST_DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/postgres"
    }

    /// A fresh identifier such as `t_1a2b3c4d5e6f`, so tests never share tables.
    static func uniqueName(_ prefix: String) -> String {
        prefix + "_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
    }

    static func client(maxConnections: Int = 4, acquireTimeout: Duration = .seconds(10),
                       applicationName: String = "backbone-tests", url: String = TestPostgres.url) -> PostgresClient {
        PostgresClient(configuration: PostgresConfiguration(url: url, maxConnections: maxConnections,
                                                            acquireTimeout: acquireTimeout, applicationName: applicationName),
                       logger: .disabled)
    }

    /// The URL with `search_path` set to `schema` (libpq `options`), for schema-isolated tests.
    static func url(searchPath schema: String) -> String {
        url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
    }
}

/// An error thrown by test bodies to check it comes back unchanged.
struct MarkerError: Error, Equatable {
    let tag: String
}
