import Foundation
import Postgres

/// What waits in the system's PostgreSQL tables: every outbox's entries and the age of its
/// oldest one, the transcode queue, room uploads not yet completed or queued, and account
/// deletions not yet finished.
///
/// Measured one way for everyone: each service's `/metrics` sets the gauges of the parts its
/// own tables hold (`record(into:)`, at scrape time), and `backbone status` reads all of them.
/// A table a service never migrated (a database without that service) is left out, not an error.
public struct SystemBacklog: Sendable, Equatable {
    /// One outbox table, as its relay (`OutboxRelay`, same name) empties it.
    public struct OutboxTable: Sendable, Equatable {
        public let name: String
        /// The service whose relay publishes it.
        public let service: String
        let table: String
        let timeColumn: String
        let condition: String?
    }

    public struct OutboxBacklog: Sendable, Equatable, Encodable {
        public let outbox: OutboxTable
        public var entries: Int64
        /// How long the oldest entry has waited; nil when empty.
        public var oldestAgeSeconds: Double?

        enum CodingKeys: String, CodingKey { case name, service, entries, oldestAgeSeconds }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(outbox.name, forKey: .name)
            try container.encode(outbox.service, forKey: .service)
            try container.encode(entries, forKey: .entries)
            try container.encodeIfPresent(oldestAgeSeconds, forKey: .oldestAgeSeconds)
        }
    }

    public struct TranscodeQueue: Sendable, Equatable, Encodable {
        public var queued: Int64
        public var transcoding: Int64
        /// How long the oldest queued job has waited since its request arrived; nil when none.
        public var oldestQueuedAgeSeconds: Double?
        /// Jobs that ended `failed` in the last hour.
        public var failedLastHour: Int64
    }

    public struct Uploads: Sendable, Equatable, Encodable {
        /// Versions minted by upload-init whose files the app is still sending.
        public var uploading: Int64
        /// Completed versions whose transcode request is not yet on Kafka.
        public var pending: Int64
        public var oldestPendingAgeSeconds: Double?
    }

    public struct Deletions: Sendable, Equatable, Encodable {
        /// Within their grace period.
        public var scheduled: Int64
        /// Announced on `user.deletions.v1`, waiting for every service's confirmation.
        public var purging: Int64
        public var oldestPurgingAgeSeconds: Double?
    }

    public var outboxes: [OutboxBacklog] = []
    public var transcode: TranscodeQueue?
    public var uploads: Uploads?
    public var deletions: Deletions?

    /// Every service that confirms account erasures through the shared `user_erasure_outbox`.
    static let erasingServices = ["ingest", "progress-projector", "analytics-aggregator", "transcode-worker", "realtime-notifier"]

    /// Every outbox of the system, named as its relay is.
    public static let outboxTables: [OutboxTable] = [
        OutboxTable(name: "room-uploads", service: "ingest", table: "room_upload_outbox", timeColumn: "created_at", condition: nil),
        OutboxTable(name: "account-deletions", service: "ingest", table: "account_deletion_outbox", timeColumn: "created_at", condition: nil),
        OutboxTable(name: "progress-notifications", service: "progress-projector", table: "progress_notify_outbox",
                    timeColumn: "enqueued_at", condition: nil),
        OutboxTable(name: "transcode-status", service: "transcode-worker", table: "transcode_status_outbox", timeColumn: "created_at",
                    condition: nil),
        OutboxTable(name: "realtime-history", service: "realtime-notifier", table: "realtime_history", timeColumn: "created_at",
                    condition: "NOT published"),
    ] + erasingServices.map {
        OutboxTable(name: "\($0)-erasure-confirmations", service: $0, table: "user_erasure_outbox", timeColumn: "created_at",
                    condition: "service = '\($0)'")
    }

    public init() {}

    /// Measures the parts owned by `services` (every part when nil).
    public static func measure(_ database: PostgresClient, services: Set<String>? = nil) async throws -> SystemBacklog {
        func owned(_ service: String) -> Bool { services?.contains(service) ?? true }
        var backlog = SystemBacklog()
        for outbox in outboxTables where owned(outbox.service) {
            let sql = "SELECT count(*) AS entries, EXTRACT(EPOCH FROM now() - min(\(outbox.timeColumn)))::float8 AS age FROM \(outbox.table)"
                + (outbox.condition.map { " WHERE \($0)" } ?? "")
            guard let row = try await firstRow(database, sql) else { continue }
            backlog.outboxes.append(OutboxBacklog(outbox: outbox, entries: try row.decode(Int64.self, "entries"),
                                                  oldestAgeSeconds: try row.decode(Double?.self, "age")))
        }
        if owned("transcode-worker"), let row = try await firstRow(database, """
            SELECT count(*) FILTER (WHERE status = 'queued') AS queued, count(*) FILTER (WHERE status = 'transcoding') AS transcoding,
                   EXTRACT(EPOCH FROM now() - min(created_at) FILTER (WHERE status = 'queued'))::float8 AS oldest,
                   count(*) FILTER (WHERE status = 'failed' AND finished_at > now() - interval '1 hour') AS failed
            FROM transcode_jobs WHERE status IN ('queued', 'transcoding') OR (status = 'failed' AND finished_at > now() - interval '1 hour')
            """) {
            backlog.transcode = TranscodeQueue(queued: try row.decode(Int64.self, "queued"), transcoding: try row.decode(Int64.self, "transcoding"),
                                               oldestQueuedAgeSeconds: try row.decode(Double?.self, "oldest"),
                                               failedLastHour: try row.decode(Int64.self, "failed"))
        }
        if owned("ingest"), let row = try await firstRow(database, """
            SELECT count(*) FILTER (WHERE status = 'uploading') AS uploading, count(*) FILTER (WHERE status = 'pending') AS pending,
                   EXTRACT(EPOCH FROM now() - min(updated_at) FILTER (WHERE status = 'pending'))::float8 AS oldest
            FROM room_versions WHERE status IN ('uploading', 'pending')
            """) {
            backlog.uploads = Uploads(uploading: try row.decode(Int64.self, "uploading"), pending: try row.decode(Int64.self, "pending"),
                                      oldestPendingAgeSeconds: try row.decode(Double?.self, "oldest"))
        }
        if owned("ingest"), let row = try await firstRow(database, """
            SELECT count(*) FILTER (WHERE status = 'scheduled') AS scheduled, count(*) FILTER (WHERE status = 'purging') AS purging,
                   EXTRACT(EPOCH FROM now() - min(published_at) FILTER (WHERE status = 'purging'))::float8 AS oldest
            FROM account_deletions WHERE status IN ('scheduled', 'purging')
            """) {
            backlog.deletions = Deletions(scheduled: try row.decode(Int64.self, "scheduled"), purging: try row.decode(Int64.self, "purging"),
                                          oldestPurgingAgeSeconds: try row.decode(Double?.self, "oldest"))
        }
        return backlog
    }

    /// The statement's first row, or nil when its table does not exist in this database.
    static func firstRow(_ database: PostgresClient, _ sql: String) async throws -> PostgresRow? {
        do {
            return try await database.query(sql).first
        } catch where error.sqlState == "42P01" {
            return nil
        }
    }
}
