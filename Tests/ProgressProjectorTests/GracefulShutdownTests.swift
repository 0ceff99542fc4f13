import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import Postgres
import ProgressProjector
import Testing

/// SIGTERM as an orchestrator sends it to a busy projector: the service group's graceful phase
/// lets the projection finish the batch in hand and publish what it committed before the
/// process exits.
@Suite("Progress projector graceful shutdown", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(3)))
struct GracefulShutdownTests {
    @Test("SIGTERM mid-stream: the batch in hand commits, every committed change is published, the outbox is empty, exit 0")
    func sigtermDuringBusyBatches() async throws {
        let harness = try await ProgressHarness(databasePrefix: "progress_graceful")
        try harness.createTopics(["graceful.events", "graceful.events.progress"])
        let events = ReadingStream.sessions(users: 40, materials: 3, sessionsPerPair: 4, seed: 7)
        try await harness.produce(events, to: "graceful.events")
        var environment = [
            "KAFKA_BROKERS": harness.cluster.bootstrapServers, "DATABASE_URL": harness.database.url, "JWT_SECRET": harness.secret,
            "READING_EVENTS_TOPIC": "graceful.events", "READING_PROGRESS_TOPIC": "graceful.events.progress",
            "PROGRESS_GROUP_ID": "g-graceful", "PROGRESS_BATCH_RECORDS": "20",
            // The relay would publish what a cut-off batch left in the outbox; it must not be needed.
            "PROGRESS_OUTBOX_INTERVAL_MS": "600000", "LOG_LEVEL": "info",
        ]
        environment["HTTP_PORT"] = String(Integration.freePort())
        let process = try ServiceProcess(executable: "progress-projector", environment: environment)
        // Busy: some batches committed, many records still to go.
        let busy = try await Integration.eventually(timeout: .seconds(60)) {
            let rows = try await harness.client.query(
                "SELECT COALESCE(SUM(GREATEST(next_offset, 0)), 0)::bigint AS n FROM consumer_offsets WHERE group_id = 'g-graceful'")
            return (try rows.first?.decode(Int64.self, "n") ?? 0) > 0
        }
        #expect(busy, "the projector committed nothing: \(process.log.suffix(2000))")
        let signalled = ContinuousClock.now
        process.terminate()
        #expect(ContinuousClock.now - signalled < .seconds(10), "SIGTERM took longer than the shutdown bound")
        #expect(process.process.terminationStatus == 0, "\(process.log.suffix(2000))")
        #expect(process.log.contains("service finished gracefully"), "\(process.log.suffix(2000))")
        let queued = try await harness.client.query("SELECT count(*)::bigint AS n FROM progress_notify_outbox")
        #expect(try queued.first?.decode(Int64.self, "n") == 0, "committed changes left unpublished in the outbox")
        let stored = try await harness.client.query(
            "SELECT COALESCE(SUM(GREATEST(next_offset, 0)), 0)::bigint AS n FROM consumer_offsets WHERE group_id = 'g-graceful'")
        #expect(try stored.first?.decode(Int64.self, "n") ?? 0 > 0)
        // Every row the process committed was announced in its final state.
        #expect(try await harness.lastNotifications("graceful.events.progress") == (try await harness.progressStates()))
        await harness.close()
    }
}
