import BackboneTestSupport
import Contracts
import Foundation
import Metrics
import Postgres
import ProgressProjector
import Projection
import ServiceRuntime
import Testing

/// A consumer whose rebalance listener gives up (its three attempts at loading the stored
/// positions all fail) used to end the projection for good: `run()` threw, and the process
/// went down with it. The runner now replaces the failed consumer after a capped backoff.
@Suite("A failed consumer is replaced", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(2)))
struct ConsumerRestartTests {
    @Test("positions cannot be loaded for longer than the listener's attempts: the projection keeps running and resumes once they can")
    func resumesAfterTheListenerGaveUp() async throws {
        let harness = try await ProgressHarness(databasePrefix: "consumer_restart")
        try harness.createTopics([Topics.readingEvents, Topics.readingProgress])
        let events = ReadingStream.sessions(users: 3, materials: 2, sessionsPerPair: 2, seed: 15)
        try await harness.produce(events, to: Topics.readingEvents)
        // The positions table is unreachable (a non-retriable error on every claim).
        _ = try await harness.client.execute("ALTER TABLE consumer_offsets RENAME TO consumer_offsets_away")
        let context = harness.context()
        let runner = ProgressProjectorService(context: context).makeRunner()
        let consuming = Task { try await runner.run() }

        let restarted = await Integration.eventually(timeout: .seconds(30), every: .milliseconds(200)) {
            context.metrics.render().contains("projection_consumer_restarts_total{group=\"progress-projector\"}")
        }
        #expect(restarted)
        try await Task.sleep(for: .seconds(1))
        _ = try await harness.client.execute("ALTER TABLE consumer_offsets_away RENAME TO consumer_offsets")

        let caughtUp = try await Integration.eventually(timeout: .seconds(30), every: .milliseconds(200)) {
            try await harness.caughtUp(group: "progress-projector", topic: Topics.readingEvents)
        }
        #expect(caughtUp)
        let logged = try await harness.client.query("SELECT count(*)::bigint AS n FROM progress_event_log").first?.decode(Int64.self, "n")
        #expect(logged == Int64(Set(events.map(\.eventId)).count))

        consuming.cancel()
        let stopped = ContinuousClock.now
        _ = await consuming.result
        #expect(ContinuousClock.now - stopped < .seconds(10))
        await harness.close()
    }
}
