import AnalyticsAggregator
import Auth
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import Kafka
import Postgres
import ServiceLogging
import ServiceRuntime
import Testing

/// The aggregator as a separate OS process, SIGKILLed at random points while events flow,
/// restarted, and compared figure by figure with a clean run.
@Suite("Analytics aggregator killed mid-stream", .serialized, .timeLimit(.minutes(8)),
       .enabled(if: Integration.isEnabled, "needs BACKBONE_INTEGRATION=1, TEST_DATABASE_URL and a built analytics-aggregator"))
struct CrashRecoveryTests {
    @Test("SIGKILL at random points, duplicates and shuffled delivery leave every figure identical to a clean run")
    func killAndRestart() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Integration.executable("analytics-aggregator")),
                     "build the product first: swift build --product analytics-aggregator")
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        try cluster.createTopic(Topics.readingEvents, partitions: 6)
        try cluster.createTopic(Topics.deadLetter(for: Topics.readingEvents), partitions: 1)
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers,
                                                                                   clientID: "analytics-crash-test"), logger: .disabled)
        let crashed = try await ScratchDatabase.create("crashed", migrate: false)
        let clean = try await ScratchDatabase.create("clean")
        defer { Task { await crashed.drop(); await clean.drop() } }

        // What the app sent, then what the topic carries: resends of a third of it, in a shuffled order,
        // and two poison records (dead-lettered, changing nothing).
        let events = ReadModelIntegrationTests.history(users: 10, days: 10)
        var records = (events + events.shuffled().prefix(events.count / 3)).shuffled().map { event in
            KafkaProducerRecord(topic: Topics.readingEvents, key: Array(event.userId.utf8), value: try! ContractCoding.encode(event))
        }
        records.insert(KafkaProducerRecord(topic: Topics.readingEvents, key: Array("history-user-1".utf8), value: Array("{not json".utf8)), at: records.count / 2)
        records.insert(KafkaProducerRecord(topic: Topics.readingEvents, key: Array("history-user-2".utf8), value: Array("{}".utf8)), at: records.count / 4)
        let waves = 5
        let waveSize = (records.count + waves - 1) / waves
        var expectedPositions: [Int32: Int64] = [:]

        let port = Integration.freePort()
        let environment = ["KAFKA_BROKERS": cluster.bootstrapServers, "DATABASE_URL": crashed.url, "JWT_SECRET": TestSecrets.jwt,
                           "HTTP_HOST": "127.0.0.1", "HTTP_PORT": String(port),
                           "ANALYTICS_BATCH_SIZE": "25", "ANALYTICS_BATCH_WAIT_MS": "20"]
        var aggregator = try ServiceProcess(executable: "analytics-aggregator", environment: environment)
        var kills = 0
        for wave in 0..<waves {
            let before = await committed(crashed)
            let chunk = Array(records[min(records.count, wave * waveSize)..<min(records.count, (wave + 1) * waveSize)])
            for result in await producer.send(chunk) {
                let report = try result.get()
                expectedPositions[report.partition] = max(expectedPositions[report.partition] ?? 0, report.offset + 1)
            }
            guard wave < waves - 1 else { break }
            // Kill while the wave is being applied: once progress shows, after a random pause.
            try await waitFor("progress after wave \(wave)", seconds: 60) { await committed(crashed) > before }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...200)))
            aggregator.kill()
            kills += 1
            aggregator = try ServiceProcess(executable: "analytics-aggregator", environment: environment)
        }
        let total = expectedPositions.values.reduce(0, +)
        try await waitFor("every record committed", seconds: 120) { await committed(crashed) == total }
        #expect(kills == waves - 1)
        #expect(aggregator.isRunning)

        // The two poison records went to the dead-letter topic (at least once: a kill between
        // the dead-letter send and the commit sends one again) and held nothing up.
        let admin = try KafkaAdmin(bootstrapServers: cluster.bootstrapServers, logger: .disabled)
        let deadLetters = try await admin.watermarks(topic: Topics.deadLetter(for: Topics.readingEvents), partition: 0)
        #expect(deadLetters.high - deadLetters.low >= 2)

        try await clean.apply(events, batchSize: 500)
        let expected = try await clean.snapshot()
        #expect(try await crashed.snapshot() == expected)

        // The figures the app sees, through the real process's HTTP port.
        let codec = JWTCodec(secret: TestSecrets.jwt)
        let reference = AnalyticsRoutes(readModel: AnalyticsReadModel(database: clean.client),
                                        authenticator: RequestAuthenticator(secret: TestSecrets.jwt)).router()
        for user in ["history-user-0", "history-user-7"] {
            let token = codec.issue(userID: user)
            for path in ["/learning/summary", "/learning/trend?days=30", "/learning/history?limit=100"] {
                let served = try RawHTTP.get(port: port, path: path, token: token)
                let pathOnly = String(path.split(separator: "?")[0])
                let query = path.contains("?") ? HTTPRequest.parseQuery(path.split(separator: "?")[1]) : [:]
                let local = await reference.respond(to: HTTPRequest(method: .get, path: pathOnly, query: query,
                                                                    headers: ["Authorization": "Bearer \(token)"]))
                #expect(served.status == 200, "\(path)")
                #expect(served.body == local.body, "\(path) for \(user)")
            }
        }
        aggregator.terminate()
        #expect(aggregator.process.terminationStatus == 0, "a clean shutdown on SIGTERM")
        await producer.shutdown()
    }

    /// Records the group has committed in Postgres (0 before the service created its tables).
    func committed(_ db: ScratchDatabase) async -> Int64 {
        let rows = try? await db.client.query("""
            SELECT COALESCE(sum(next_offset), 0)::bigint AS n FROM consumer_offsets
            WHERE group_id = 'analytics-aggregator' AND next_offset >= 0
            """)
        return (try? rows?.first?.decode(Int64.self, "n")) ?? 0
    }

    func waitFor(_ what: String, seconds: Int, _ condition: () async -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("timed out waiting for \(what)")
        throw CancellationError()
    }
}
