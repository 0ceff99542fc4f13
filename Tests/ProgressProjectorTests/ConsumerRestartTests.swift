import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import Kafka
import Postgres
import ProgressProjector
import Projection
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime
import Testing

/// A consumer whose rebalance listener gives up (its three attempts at loading the stored
/// positions all fail) used to end the projection for good: `run()` threw, and the process
/// went down with it. The runner now replaces the failed consumer after a capped backoff.
@Suite("A failed consumer is replaced", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(2)))
struct ConsumerRestartTests {
    /// A progress runner in `group` whose member never gets partitions: its session timeout (2 s)
    /// is shorter than the embedded broker's first rebalance delay (3 s), so the mock drops every
    /// joiner before it answers it. It reports itself stalled after `stallLimit`.
    static func unassignedRunner(_ harness: ProgressHarness, group: String, stallLimit: Duration,
                                 context: ServiceContext) -> ProjectionRunner<ReadingProgressProjection> {
        var configuration = ProjectionRunnerConfiguration(bootstrapServers: harness.cluster.bootstrapServers, groupID: group,
                                                          topics: [Topics.readingEvents], sessionTimeout: .seconds(2))
        configuration.assignmentStallLimit = stallLimit
        return ProjectionRunner(projection: ReadingProgressProjection(producer: harness.producer, database: harness.client),
                                configuration: configuration, context: context)
    }

    /// Cancels the consuming task; returns how long it took to end.
    static func stop(_ consuming: Task<Void, any Error>) async -> Duration {
        consuming.cancel()
        let stopped = ContinuousClock.now
        _ = await consuming.result
        return ContinuousClock.now - stopped
    }

    @Test("positions cannot be loaded for longer than the listener's attempts: the projection keeps running and resumes once they can")
    func resumesAfterTheListenerGaveUp() async throws {
        let harness = try await ProgressHarness(databasePrefix: "consumer_restart")
        try harness.createTopics([Topics.readingEvents, Topics.readingProgress])
        let events = ReadingStream.sessions(users: 3, materials: 2, sessionsPerPair: 2, seed: 15)
        try await harness.produce(events, to: Topics.readingEvents)
        // The positions table is unreachable (a non-retriable error on every claim).
        _ = try await harness.client.execute("ALTER TABLE consumer_offsets RENAME TO consumer_offsets_away")
        let context = harness.context()
        // The mock waits session timeout − 1 s before it forms the group again for the new consumer.
        let runner = ProgressProjectorService(context: context, configuration: ProgressConfiguration(sessionTimeout: .seconds(6))).makeRunner()
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

        #expect(await Self.stop(consuming) < .seconds(10))
        await harness.close()
    }

    /// A member the group never gives partitions to, while its topic's records wait and no
    /// stored position of the group moves, used to poll forever with `/readyz` at 200.
    @Test("a member left without partitions while records wait that nobody processes: not ready, and its consumer is replaced")
    func unassignedMemberIsNotReadyAndReplaced() async throws {
        let harness = try await ProgressHarness(databasePrefix: "assignment_stall")
        try harness.createTopics([Topics.readingEvents, Topics.readingProgress])
        let events = ReadingStream.sessions(users: 2, materials: 1, sessionsPerPair: 1, seed: 16)
        try await harness.produce(events, to: Topics.readingEvents)
        let context = harness.context()
        let runner = Self.unassignedRunner(harness, group: "progress-stalled", stallLimit: .seconds(3), context: context)
        let consuming = Task { try await runner.run() }
        #expect(!runner.isAssignmentStalled)

        let stalled = await Integration.eventually(timeout: .seconds(15), every: .milliseconds(100)) { runner.isAssignmentStalled }
        #expect(stalled, "never reported: \(context.metrics.render())")
        let replaced = await Integration.eventually(timeout: .seconds(10), every: .milliseconds(100)) {
            let metrics = context.metrics.render()
            return metrics.contains("projection_assignment_stalls_total{group=\"progress-stalled\"}")
                && metrics.contains("projection_consumer_restarts_total{group=\"progress-stalled\"}")
        }
        #expect(replaced)
        #expect(runner.committedPositions.isEmpty)

        #expect(await Self.stop(consuming) < .seconds(10))
        await harness.close()
    }

    @Test("an idle member without partitions (nothing waits) stays ready")
    func idleUnassignedMemberStaysReady() async throws {
        let harness = try await ProgressHarness(databasePrefix: "assignment_idle")
        try harness.createTopics([Topics.readingEvents, Topics.readingProgress])
        let context = harness.context()
        let runner = Self.unassignedRunner(harness, group: "progress-idle", stallLimit: .seconds(1), context: context)
        let consuming = Task { try await runner.run() }
        // Past the limit and its first check: the topic is empty, nothing is late.
        try await Task.sleep(for: .milliseconds(2500))
        #expect(!runner.isAssignmentStalled)
        #expect(!context.metrics.render().contains("projection_assignment_stalls_total{"))
        _ = await Self.stop(consuming)
        await harness.close()
    }
}
