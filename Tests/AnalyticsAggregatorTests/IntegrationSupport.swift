import AnalyticsAggregator
import Contracts
import Foundation
import Logging
import Postgres
import Projection

enum Integration {
    static let enabled = ProcessInfo.processInfo.environment["BACKBONE_INTEGRATION"] == "1"
    static let jwtSecret = "analytics-test-secret-0123456789"

    static var adminURL: String {
        ProcessInfo.processInfo.environment["TEST_DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/postgres"
    }
}

/// A database of its own for one suite or test (`CREATE DATABASE` from the admin URL),
/// migrated like the service does it, dropped by `drop()`.
struct ScratchDatabase {
    let name: String
    let url: String
    let client: PostgresClient

    static func create(_ label: String, migrate: Bool = true) async throws -> ScratchDatabase {
        let name = "analytics_\(label)_\(UInt32.random(in: 0...UInt32.max))"
        let admin = PostgresClient(configuration: PostgresConfiguration(url: Integration.adminURL, maxConnections: 1), logger: .disabled)
        try await admin.execute("CREATE DATABASE \(name)")
        await admin.close()
        let url = replacingDatabase(in: Integration.adminURL, with: name)
        let client = PostgresClient(configuration: PostgresConfiguration(url: url, maxConnections: 8), logger: .disabled)
        if migrate {
            _ = try await PostgresMigrator(migrations: ProjectionSchema.migrations + AnalyticsSchema.migrations, logger: .disabled)
                .migrate(client)
        }
        return ScratchDatabase(name: name, url: url, client: client)
    }

    func drop() async {
        await client.close()
        let admin = PostgresClient(configuration: PostgresConfiguration(url: Integration.adminURL, maxConnections: 1), logger: .disabled)
        _ = try? await admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        await admin.close()
    }

    /// `postgres://u@h:p/db?x` → the same with another database name.
    static func replacingDatabase(in url: String, with name: String) -> String {
        let (base, query) = url.firstIndex(of: "?").map { (String(url[..<$0]), String(url[$0...])) } ?? (url, "")
        let schemeEnd = base.range(of: "://").map(\.upperBound) ?? base.startIndex
        guard let slash = base[schemeEnd...].firstIndex(of: "/") else { return base + "/" + name + query }
        return String(base[..<slash]) + "/" + name + query
    }

    /// Applies events the way the runner does: one transaction per batch.
    func apply(_ events: [ReadingEventRecord], batchSize: Int = 100) async throws {
        let projection = AnalyticsProjection()
        var offset: Int64 = 0
        for chunk in stride(from: 0, to: events.count, by: batchSize).map({ Array(events[$0..<min($0 + batchSize, events.count)]) }) {
            let projected = chunk.map { event -> ProjectedEvent<ReadingEventRecord> in
                offset += 1
                return ProjectedEvent(event: event, topic: Topics.readingEvents, partition: 0, offset: offset)
            }
            try await client.withTransaction { connection in try await projection.apply(projected, in: connection) }
        }
    }

    /// Every figure of the read model as text, in a canonical order.
    func snapshot() async throws -> String {
        let queries = [
            "SELECT user_id, day::text, active_seconds, events, materials_read, materials_completed, sessions FROM analytics_daily_figures ORDER BY 1, 2",
            "SELECT user_id, client_session_id, material_id, started_at::text, last_event_at::text, COALESCE(closed_at::text, '-'), active_seconds, completed::text, events FROM analytics_sessions ORDER BY 1, 2",
            "SELECT user_id, material_id, first_completed_at::text FROM analytics_completions ORDER BY 1, 2",
            "SELECT user_id, latest_event_at::text, tz_offset_minutes FROM analytics_users ORDER BY 1",
            "SELECT count(*) FROM analytics_events",
        ]
        var lines: [String] = []
        for sql in queries {
            for row in try await client.query(sql) {
                lines.append(row.columns.indices.map { row.text(row.columns[$0]) ?? "NULL" }.joined(separator: "|"))
            }
            lines.append("--")
        }
        return lines.joined(separator: "\n")
    }
}
