import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import Kafka
import Postgres
import ProgressProjector
import Projection
import ServiceLogging
import Testing

@Suite("Progress projector crash safety", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(5)))
struct ProgressCrashTests {
    @Test("SIGKILL of the projector process at random points while events flow: the tables equal a clean run")
    func killNineMidStream() async throws {
        let harness = try await ProgressHarness(databasePrefix: "progress_crash")
        try harness.createTopics(["crash.events", "crash.events.progress"])
        var rng = SplitMix64(state: 2026)
        let events = ReadingStream.disordered(ReadingStream.sessions(users: 20, materials: 3, sessionsPerPair: 3, seed: 42), seed: 43)

        // Events keep arriving in small bursts while the projector is killed and restarted.
        let producing = Task {
            for start in stride(from: 0, to: events.count, by: 40) {
                try await harness.produce(Array(events[start..<min(start + 40, events.count)]), to: "crash.events")
                try await Task.sleep(for: .milliseconds(60))
            }
        }
        let environment = [
            "KAFKA_BROKERS": harness.cluster.bootstrapServers, "DATABASE_URL": harness.database.url, "JWT_SECRET": harness.secret,
            "READING_EVENTS_TOPIC": "crash.events", "READING_PROGRESS_TOPIC": "crash.events.progress",
            "PROGRESS_GROUP_ID": "g-crash", "PROGRESS_BATCH_RECORDS": "25", "KAFKA_SESSION_TIMEOUT_MS": "6000",
            "PROGRESS_OUTBOX_INTERVAL_MS": "300",
        ]
        var kills = 0
        for _ in 0..<4 {
            var env = environment
            env["HTTP_PORT"] = String(Integration.freePort())
            let process = try ServiceProcess(executable: "progress-projector", environment: env)
            try await Task.sleep(for: .milliseconds(Int.random(in: 2500...6000, using: &rng)))
            #expect(process.isRunning, "projector died on its own: \(process.log.suffix(2000))")
            process.kill()
            kills += 1
        }
        try await producing.value
        let before = try await harness.client.query(
            "SELECT COALESCE(SUM(GREATEST(next_offset, 0)), 0)::bigint AS n FROM consumer_offsets WHERE group_id = 'g-crash'")
        #expect(try before.first?.decode(Int64.self, "n") ?? 0 > 0, "the killed processes had committed work")
        var env = environment
        env["HTTP_PORT"] = String(Integration.freePort())
        let survivor = try ServiceProcess(executable: "progress-projector", environment: env)
        let caughtUp = try await Integration.eventually(timeout: .seconds(90)) {
            try await harness.caughtUp(group: "g-crash", topic: "crash.events")
        }
        #expect(caughtUp, "projector log: \(survivor.log.suffix(2000))")
        // Notifications a kill cut off between commit and publish are sent by the outbox relay.
        let drained = try await Integration.eventually(timeout: .seconds(30)) {
            try await harness.client.query("SELECT 1 FROM progress_notify_outbox LIMIT 1").isEmpty
        }
        #expect(drained, "projector log: \(survivor.log.suffix(2000))")
        survivor.terminate()
        #expect(try await harness.lastNotifications("crash.events.progress") == (try await harness.progressStates()),
                "the last notification of every row is its final state")
        let crashed = try await harness.progressDump()
        let logged = try await harness.client.query("SELECT count(*)::bigint AS n FROM progress_event_log")

        // The clean run: the same topic, another group, another database, nobody killed.
        let clean = try await TestDatabase.create("progress_clean")
        let cleanClient = clean.client()
        _ = try await PostgresMigrator(migrations: ProgressProjectorService.migrations, logger: .disabled).migrate(cleanClient)
        let runner = ProgressProjectorService(
            context: harness.context(client: cleanClient),
            configuration: ProgressConfiguration(eventsTopic: "crash.events", progressTopic: "crash.events.progress", groupID: "g-clean")
        ).makeRunner()
        let task = Task { try await runner.run() }
        let cleanCaughtUp = try await Integration.eventually(timeout: .seconds(60)) {
            try await harness.caughtUp(group: "g-clean", topic: "crash.events", client: cleanClient)
        }
        #expect(cleanCaughtUp)
        task.cancel()
        _ = await task.result
        let expected = try await harness.progressDump(client: cleanClient)

        #expect(kills == 4)
        #expect(expected.count == 60)
        #expect(crashed == expected, "nothing lost, nothing counted twice")
        #expect(try logged.first?.decode(Int64.self, "n") == Int64(Set(events.map(\.eventId)).count))
        await cleanClient.close()
        await clean.drop()
        await harness.close()
    }
}
