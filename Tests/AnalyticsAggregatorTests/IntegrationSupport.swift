import AnalyticsAggregator
import BackboneTestSupport
import Contracts
import Foundation
import Postgres
import Projection
import ServiceLogging

enum TestSecrets {
    static let jwt = "analytics-test-secret-0123456789"
}

/// A database of its own for one test (the shared `TestDatabase`), migrated like the
/// service does it unless asked not to, dropped by `drop()`.
struct ScratchDatabase {
    let database: TestDatabase
    let client: PostgresClient
    var name: String { database.name }
    var url: String { database.url }

    static func create(_ label: String, migrate: Bool = true) async throws -> ScratchDatabase {
        let database = try await TestDatabase.create("analytics_\(label)")
        let client = database.client()
        if migrate {
            _ = try await PostgresMigrator(migrations: ProjectionSchema.migrations + AnalyticsSchema.migrations, logger: .disabled)
                .migrate(client)
        }
        return ScratchDatabase(database: database, client: client)
    }

    func drop() async {
        await client.close()
        await database.drop()
    }

    /// Applies events the way the runner does: one transaction per batch.
    func apply(_ events: [ReadingEventRecord], batchSize: Int = 100, streakThresholdSeconds: Int = 60) async throws {
        let projection = AnalyticsProjection(streakThresholdSeconds: streakThresholdSeconds)
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
            "SELECT \(UserSummary.columns) FROM analytics_users ORDER BY 1",
            "SELECT user_id, start_day::text, end_day::text FROM analytics_streak_runs ORDER BY 1, 2",
            ActivityMonths.keptRows,
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
