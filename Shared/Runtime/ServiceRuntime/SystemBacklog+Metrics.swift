import Postgres
import PrometheusMetrics

extension SystemBacklog {
    /// Describes the gauges `record(into:)` sets.
    public static func describe(_ metrics: MetricsRegistry) {
        metrics.describe("outbox_entries", type: "gauge", help: "Entries of an outbox table not yet published, by outbox.")
        metrics.describe("outbox_oldest_entry_age_seconds", type: "gauge",
                         help: "How long the oldest unpublished entry of an outbox has waited (0 when empty).")
        metrics.describe("transcode_queue_jobs", type: "gauge", help: "Transcode jobs queued or in progress, by status.")
        metrics.describe("transcode_queue_oldest_age_seconds", type: "gauge",
                         help: "How long the oldest queued transcode job has waited since its request arrived (0 when none).")
        metrics.describe("room_uploads_waiting", type: "gauge",
                         help: "Room versions still uploading, or completed and waiting for their transcode request (pending).")
        metrics.describe("account_deletions_open", type: "gauge", help: "Account deletions scheduled or purging.")
    }

    /// What a `/metrics` scrape runs: measures the parts owned by `services` (every part when
    /// nil) and sets their gauges; a database that cannot answer leaves the last values in place.
    public static func collector(database: PostgresClient, metrics: MetricsRegistry,
                                 services: Set<String>?) -> @Sendable () async -> Void {
        describe(metrics)
        return {
            guard let backlog = try? await measure(database, services: services) else { return }
            backlog.record(into: metrics)
        }
    }

    /// Sets the gauges of what was measured.
    public func record(into metrics: MetricsRegistry) {
        for backlog in outboxes {
            let labels = ["outbox": backlog.outbox.name, "service": backlog.outbox.service]
            metrics.set("outbox_entries", Double(backlog.entries), labels: labels)
            metrics.set("outbox_oldest_entry_age_seconds", backlog.oldestAgeSeconds ?? 0, labels: labels)
        }
        if let transcode {
            metrics.set("transcode_queue_jobs", Double(transcode.queued), labels: ["status": "queued"])
            metrics.set("transcode_queue_jobs", Double(transcode.transcoding), labels: ["status": "transcoding"])
            metrics.set("transcode_queue_oldest_age_seconds", transcode.oldestQueuedAgeSeconds ?? 0)
        }
        if let uploads {
            metrics.set("room_uploads_waiting", Double(uploads.uploading), labels: ["status": "uploading"])
            metrics.set("room_uploads_waiting", Double(uploads.pending), labels: ["status": "pending"])
        }
        if let deletions {
            metrics.set("account_deletions_open", Double(deletions.scheduled), labels: ["status": "scheduled"])
            metrics.set("account_deletions_open", Double(deletions.purging), labels: ["status": "purging"])
        }
    }
}
