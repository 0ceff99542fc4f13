import Auth
@testable import BackboneCLI
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import Kafka
import Postgres
import ServiceLogging
import Synchronization
import Testing

/// `backbone rebuild progress|analytics` as an operator runs it: the built `backbone` against
/// the real services (progress-projector and analytics-aggregator as child processes,
/// consuming and serving), a real PostgreSQL and an embedded Kafka cluster in this process.
@Suite("backbone rebuild", .serialized, .timeLimit(.minutes(4)), .enabled(if: Integration.isEnabled))
struct RebuildCommandTests {
    static let secret = "rebuild-test-secret-0123456789abcdef"
    static let progressTables = ["progress_event_log", "reading_progress"]
    static let analyticsTables = ["analytics_events", "analytics_daily", "analytics_day_materials", "analytics_day_sessions",
                                  "analytics_completions", "analytics_sessions", "analytics_users", "analytics_streak_runs",
                                  "analytics_months"]

    /// The live system: the cluster, a database and both services.
    final class Stack: @unchecked Sendable {
        // @unchecked: used by one test at a time, sequentially.
        let cluster: EmbeddedKafkaCluster
        let database: TestDatabase
        let client: PostgresClient
        let producer: KafkaProducer
        var services: [ServiceProcess] = []
        var progressURL = "", analyticsURL = ""
        var produced = 0

        init(partitions: Int32) async throws {
            cluster = try EmbeddedKafkaCluster(brokers: 1)
            try cluster.createTopic(Topics.readingEvents, partitions: partitions)
            database = try await TestDatabase.create("rebuild")
            client = database.client(maxConnections: 4)
            producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers),
                                         logger: .disabled)
        }

        var environment: [String: String] {
            ["KAFKA_BROKERS": cluster.bootstrapServers, "DATABASE_URL": database.url, "JWT_SECRET": RebuildCommandTests.secret]
        }

        /// Starts both services and waits until their consumers own the topic's partitions.
        func startServices() async throws {
            for (name, group) in [("progress-projector", "progress-projector"), ("analytics-aggregator", "analytics-aggregator")] {
                let port = Integration.freePort()
                var env = environment
                env["HTTP_HOST"] = "127.0.0.1"
                env["HTTP_PORT"] = String(port)
                services.append(try ServiceProcess(executable: name, environment: env))
                if name == "progress-projector" { progressURL = "http://127.0.0.1:\(port)" } else { analyticsURL = "http://127.0.0.1:\(port)" }
                let claimed = await Integration.eventually(timeout: .seconds(30)) {
                    let rows = try? await self.client.query("SELECT count(*) AS n FROM consumer_offsets WHERE group_id = $1", [group])
                    return ((try? rows?.first?.decode(Int64.self, "n")) ?? 0) > 0
                }
                #expect(claimed, "\(name) did not start: \(services.last?.log ?? "")")
            }
        }

        func produce(_ events: [ReadingEventRecord]) async throws {
            let records = try events.map {
                KafkaProducerRecord(topic: Topics.readingEvents, key: Array($0.userId.utf8), value: try ContractCoding.encode($0))
            }
            for result in await producer.send(records) { _ = try result.get() }
            produced += events.count
        }

        /// Waits until both live consumers have stored positions past every produced record.
        func caughtUp() async throws -> Bool {
            await Integration.eventually(timeout: .seconds(60)) {
                guard let rows = try? await self.client.query("""
                    SELECT group_id, sum(GREATEST(next_offset, 0)) AS n FROM consumer_offsets
                    WHERE group_id IN ('progress-projector', 'analytics-aggregator') GROUP BY group_id
                    """) else { return false }
                let sums = rows.compactMap { try? $0.decode(Int64.self, "n") }
                return sums.count == 2 && sums.allSatisfy { $0 == Int64(self.produced) }
            }
        }

        /// Every row of the tables (without the columns the clock fills), per table, sorted.
        func snapshot(_ tables: [String], users: Set<String>? = nil) async throws -> [String: [String]] {
            var result: [String: [String]] = [:]
            for table in tables {
                let rows = try await client.query("""
                    SELECT user_id, (to_jsonb(t) - 'updated_at' - 'projected_at' - 'applied_at')::text AS j FROM \(table) t ORDER BY 2
                    """)
                result[table] = try rows.filter { users?.contains(try $0.decode(String.self, "user_id")) ?? true }
                    .map { try $0.decode(String.self, "j") }
            }
            return result
        }

        func schemaExists(_ name: String) async throws -> Bool {
            try await client.query("SELECT to_regnamespace($1) IS NOT NULL AS e", [name]).first?.decode(Bool.self, "e") == true
        }

        func stop() async {
            for service in services { service.terminate() }
            await client.close()
            await database.drop()
            cluster.shutdown()
        }
    }

    static func withStack(partitions: Int32 = 3, services: Bool = true, _ body: (Stack) async throws -> Void) async throws {
        try await withResource(try await Stack(partitions: partitions), release: { await $0.stop() }) { stack in
            if services { try await stack.startServices() }
            try await body(stack)
        }
    }

    /// Reading sessions of `users` over three materials: heartbeats with page positions,
    /// some completions and closes; event ids (UUIDs) unique per `prefix`.
    static func events(_ count: Int, users: [String], prefix: String) -> [ReadingEventRecord] {
        let start = Date(timeIntervalSince1970: 1_796_000_000)
        return (0..<count).map { i in
            let user = users[i % users.count], material = "m-\((i / users.count) % 3)"
            let type: ReadingEventType = i % 37 == 0 ? .markedAsRead : (i % 29 == 0 ? .closed : .heartbeat)
            let item = ReadingEventUploadItem(
                eventId: String(format: "%08x-0000-4000-8000-%012x", prefix.utf8.reduce(UInt32(2166136261)) { ($0 ^ UInt32($1)) &* 16777619 }, i),
                clientSessionId: "s-\(user)-\(material)-\(i / 60)", readingTargetType: .knowledgeSource,
                materialId: material, knowledgeBaseId: "kb", eventType: type, position: .page(1 + i % 40, of: 40),
                activeSecondsDelta: 5 + i % 11, clientTimestamp: start.addingTimeInterval(Double(i * 7)),
                clientTimezoneOffsetMinutes: 480, sequence: i, platform: "iOS", appVersion: "2.3.0")
            return ReadingEventRecord(userId: user, receivedAt: start, item: item)
        }
    }

    final class StopFlag: Sendable {
        private let flag = Atomic<Bool>(false)
        var isSet: Bool { flag.load(ordering: .relaxed) }
        func set() { flag.store(true, ordering: .relaxed) }
    }

    /// GETs `first` and `second` in turn until `stop` is set, each answer kept as (status, url,
    /// body). Paced, so the bound (at most 200 s) outlasts a slow machine's rebuilds.
    static func readers(until stop: StopFlag, _ first: (url: String, token: String),
                        _ second: (url: String, token: String)) -> Task<[(Int, String, String)], any Error> {
        Task {
            let http = DemoHTTPClient()
            var answers: [(Int, String, String)] = []
            for round in 0..<40_000 where !stop.isSet {
                let (url, token) = round % 2 == 0 ? first : second
                let response = try await http.send("GET", service: "reader", url: url, token: token)
                answers.append((response.status, url, response.text))
                try await Task.sleep(for: .milliseconds(5))
            }
            return answers
        }
    }

    static let users = ["user-0", "user-1", "user-2", "user-3", "user-4"]

    /// Hand-made damage: a changed row, a missing row and a row the topic never produced, in
    /// both models. Returns the expected dry-run lines (table, change, key) per model.
    static func corrupt(_ client: PostgresClient) async throws -> (progress: Set<String>, analytics: Set<String>) {
        _ = try await client.execute("UPDATE reading_progress SET total_active_seconds = 99999 WHERE user_id = 'user-1' AND material_id = 'm-0'")
        _ = try await client.execute("DELETE FROM reading_progress WHERE user_id = 'user-2' AND material_id = 'm-1'")
        _ = try await client.execute("""
            INSERT INTO reading_progress (user_id, material_id, status, first_read_at, last_read_at, reading_target_type,
                                          latest_ts, latest_seq, latest_event_id)
            VALUES ('ghost', 'm-0', 'in_progress', now(), now(), 'knowledgeSource', now(), 1, 'none')
            """)
        _ = try await client.execute("UPDATE analytics_daily SET active_seconds = active_seconds + 1 WHERE user_id = 'user-3'")
        let daily = try await client.query("SELECT day::text AS d FROM analytics_daily WHERE user_id = 'user-3' ORDER BY day")
        let session = try #require(try await client.query("""
            DELETE FROM analytics_sessions WHERE (user_id, client_session_id) IN
                (SELECT user_id, client_session_id FROM analytics_sessions WHERE user_id = 'user-2' ORDER BY 2 LIMIT 1)
            RETURNING client_session_id
            """).first?.decode(String.self, "client_session_id"))
        _ = try await client.execute("INSERT INTO analytics_completions VALUES ('ghost', 'm-9', now())")
        let progress: Set<String> = [
            #"reading_progress changed {"user_id" : "user-1", "material_id" : "m-0"}"#,
            #"reading_progress added {"user_id" : "user-2", "material_id" : "m-1"}"#,
            #"reading_progress removed {"user_id" : "ghost", "material_id" : "m-0"}"#,
        ]
        var analytics: Set<String> = [
            #"analytics_sessions added {"user_id" : "user-2", "client_session_id" : "\#(session)"}"#,
            #"analytics_completions removed {"user_id" : "ghost", "material_id" : "m-9"}"#,
        ]
        for row in daily { analytics.insert(#"analytics_daily changed {"user_id" : "user-3", "day" : "\#(try row.decode(String.self, "d"))"}"#) }
        return (progress, analytics)
    }

    /// The dry run's difference lines as "table change key".
    static func differences(_ outcome: CLIProcess.Outcome) throws -> Set<String> {
        Set(try outcome.lines.compactMap { line -> String? in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
            guard object["event"] as? String == "difference" else { return nil }
            let key = try JSONSerialization.data(withJSONObject: try #require(object["key"]), options: [.sortedKeys])
            return "\(object["table"]!) \(object["change"]!) \(String(decoding: key, as: UTF8.self))"
        })
    }

    static func normalized(_ expected: Set<String>) -> Set<String> {
        Set(expected.map { line in
            let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
            let object = try! JSONSerialization.jsonObject(with: Data(parts[2].utf8))
            let key = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            return "\(parts[0]) \(parts[1]) \(String(decoding: key, as: UTF8.self))"
        })
    }

    @Test("a corrupted model: --dry-run names exactly the damaged rows; the rebuild restores the topic's projection while GETs answer 200 with the old or the new answer")
    func rebuildCorrupted() async throws {
        try await Self.withStack { stack in
            try await stack.produce(Self.events(600, users: Self.users, prefix: "a"))
            #expect(try await stack.caughtUp())
            let clean = try await stack.snapshot(Self.progressTables + Self.analyticsTables)
            let expected = try await Self.corrupt(stack.client)

            let progressDiff = try await CLIProcess.run(["rebuild", "progress", "--dry-run", "--rows", "100"], environment: stack.environment)
            #expect(progressDiff.status == 3, "\(progressDiff.stderr)")
            #expect(try Self.differences(progressDiff) == Self.normalized(expected.progress))
            let analyticsDiff = try await CLIProcess.run(["rebuild", "analytics", "--dry-run", "--rows", "100"], environment: stack.environment)
            #expect(analyticsDiff.status == 3, "\(analyticsDiff.stderr)")
            #expect(try Self.differences(analyticsDiff) == Self.normalized(expected.analytics))
            #expect(try await !stack.schemaExists("rebuild_progress"))
            #expect(try await stack.snapshot(Self.progressTables) != clean.filter { Self.progressTables.contains($0.key) })

            // Readers of the damaged rows, and writers of other users, throughout both rebuilds.
            let token1 = JWTCodec(secret: Self.secret).issue(userID: "user-1", ttl: 3600)
            let token2 = JWTCodec(secret: Self.secret).issue(userID: "user-2", ttl: 3600)
            let progressPath = "\(stack.progressURL)/materials/m-0/reading-progress"
            let historyPath = "\(stack.analyticsURL)/learning/history?limit=100"
            let http = DemoHTTPClient()
            let progressBefore = try await http.send("GET", service: "progress", url: progressPath, token: token1).text
            let historyBefore = try await http.send("GET", service: "analytics", url: historyPath, token: token2).text
            let stop = StopFlag()
            let readers = Self.readers(until: stop, (progressPath, token1), (historyPath, token2))
            let late = ["late-0", "late-1"]
            let writers = Task {
                for round in 0..<20 where !stop.isSet {
                    try await stack.produce(Self.events(40, users: late, prefix: "late-\(round)"))
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            let progressRun = try await CLIProcess.run(["rebuild", "progress"], environment: stack.environment)
            let analyticsRun = try await CLIProcess.run(["rebuild", "analytics"], environment: stack.environment)
            try await Task.sleep(for: .milliseconds(500))  // the readers go on a little on the new analytics tables
            stop.set()
            let answers = try await readers.value
            try await writers.value
            #expect(progressRun.status == 0, "\(progressRun.stderr)")
            #expect(analyticsRun.status == 0, "\(analyticsRun.stderr)")
            #expect(progressRun.lines.last?.contains(#""event":"swapped""#) == true, "\(progressRun.stdout)")

            #expect(try await stack.caughtUp())
            let progressAfter = try await http.send("GET", service: "progress", url: progressPath, token: token1).text
            let historyAfter = try await http.send("GET", service: "analytics", url: historyPath, token: token2).text
            #expect(progressAfter != progressBefore && historyAfter != historyBefore)
            // The readers saw both models, so they were reading when the swaps happened.
            #expect(answers.contains { $0.1 == progressPath && $0.2 == progressBefore } && answers.contains { $0.1 == progressPath && $0.2 == progressAfter },
                    "\(answers.count) answers")
            #expect(answers.contains { $0.1 == historyPath && $0.2 == historyBefore } && answers.contains { $0.1 == historyPath && $0.2 == historyAfter })
            for (status, url, body) in answers {
                #expect(status == 200, "\(url): \(body)")
                let allowed = url == progressPath ? [progressBefore, progressAfter] : [historyBefore, historyAfter]
                #expect(allowed.contains(body), "\(url) answered neither the old nor the new model: \(body)")
            }

            // The original users' rows are the clean projection again; the users written
            // during the rebuild have each of their events exactly once.
            #expect(try await stack.snapshot(Self.progressTables + Self.analyticsTables, users: Set(Self.users)) == clean)
            let lateEvents = try await stack.client.query("""
                SELECT (SELECT count(*) FROM progress_event_log WHERE user_id LIKE 'late-%') AS p,
                       (SELECT count(*) FROM analytics_events WHERE user_id LIKE 'late-%') AS a,
                       (SELECT sum(total_active_seconds) FROM reading_progress WHERE user_id LIKE 'late-%') AS s
                """).first
            let lateCount = Int64(stack.produced - 600)
            #expect(try lateEvents?.decode(Int64.self, "p") == lateCount)
            #expect(try lateEvents?.decode(Int64.self, "a") == lateCount)
            let lateSeconds = (0..<20).reduce(0) { total, _ in total + (0..<40).reduce(0) { $0 + 5 + $1 % 11 } }
            #expect(try lateEvents?.decode(Int64.self, "s") == Int64(lateSeconds) * lateCount / 800)
            let check = try await CLIProcess.run(["rebuild", "progress", "--dry-run"], environment: stack.environment)
            #expect(check.status == 0, "\(check.stdout)")
        }
    }

    @Test("a rebuild killed half-way resumes when run again and finishes correctly; --abort drops an interrupted one's shadow")
    func killedAndResumed() async throws {
        try await Self.withStack { stack in
            try await stack.produce(Self.events(1_500, users: Self.users, prefix: "k"))
            #expect(try await stack.caughtUp())
            let clean = try await stack.snapshot(Self.progressTables)
            _ = try await stack.client.execute("UPDATE reading_progress SET progress_percent = 1 WHERE user_id = 'user-4'")

            let done = try await stack.rebuildKilled("progress", after: 60)
            #expect(done >= 60 && done < 1_500, "killed after \(done) records")
            #expect(try await stack.schemaExists("rebuild_progress"))
            let resumed = try await CLIProcess.run(["rebuild", "progress"], environment: stack.environment)
            #expect(resumed.status == 0, "\(resumed.stderr)")
            #expect(resumed.lines.first?.contains(#""event":"resumed""#) == true, "\(resumed.stdout)")
            #expect(try await !stack.schemaExists("rebuild_progress"))
            #expect(try await stack.snapshot(Self.progressTables) == clean)

            _ = try await stack.rebuildKilled("progress", after: 60)
            #expect(try await stack.schemaExists("rebuild_progress"))
            let aborted = try await CLIProcess.run(["rebuild", "progress", "--abort"], environment: stack.environment)
            #expect(aborted.status == 0, "\(aborted.stderr)")
            #expect(aborted.lines.last?.contains(#""dropped":true"#) == true, "\(aborted.stdout)")
            #expect(try await !stack.schemaExists("rebuild_progress"))
            #expect(try await stack.snapshot(Self.progressTables) == clean)
        }
    }

    @Test("a topic whose oldest records retention removed is refused, naming partition and offsets, unless --allow-gaps; usage and help")
    func retentionGap() async throws {
        try await Self.withStack(partitions: 1, services: false) { stack in
            _ = try await PostgresMigrator(migrations: ServiceCatalog.allMigrations, logger: .disabled).migrate(stack.client)
            // The embedded broker keeps the last 5 MB of a partition: 12 records of 600 kB push the first ones out.
            for index in 0..<12 {
                _ = try await stack.producer.send(KafkaProducerRecord(topic: Topics.readingEvents, key: Array("big".utf8),
                                                                      value: Array(repeating: UInt8(ascii: "x"), count: 600_000) + [UInt8(index)]))
            }
            let admin = try KafkaAdmin(bootstrapServers: stack.cluster.bootstrapServers, logger: .disabled)
            let low = try await admin.watermarks(topic: Topics.readingEvents, partition: 0).low
            #expect(low > 0)

            let refused = try await CLIProcess.run(["rebuild", "progress"], environment: stack.environment)
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("retention has removed the oldest records: \(Topics.readingEvents) partition 0 starts at offset \(low) (\(low) records removed)"),
                    "\(refused.stderr)")
            #expect(refused.stderr.contains("--allow-gaps"))
            #expect(try await !stack.schemaExists("rebuild_progress"))

            // Past the retention check, a group without stored positions is refused too (the
            // swap would otherwise put an empty model in place).
            let noGroup = try await CLIProcess.run(["rebuild", "progress", "--allow-gaps"], environment: stack.environment)
            #expect(noGroup.status == 1 && noGroup.stderr.contains("has no stored positions"), "\(noGroup.stderr)")
            #expect(try await !stack.schemaExists("rebuild_progress"))

            // As if progress-projector had consumed everything left (its records are not
            // reading events: the live consumer dead-lettered them, the rebuild skips them).
            let high = try await admin.watermarks(topic: Topics.readingEvents, partition: 0).high
            _ = try await stack.client.execute(
                "INSERT INTO consumer_offsets (group_id, topic, partition, next_offset, owner) VALUES ('progress-projector', $1, 0, $2, 'test')",
                [Topics.readingEvents, high])
            let allowed = try await CLIProcess.run(["rebuild", "progress", "--allow-gaps", "--dry-run"], environment: stack.environment)
            #expect(allowed.status == 0, "\(allowed.stderr)")
            #expect(allowed.lines.contains { $0.contains(#""event":"summary""#) && $0.contains(#""identical":true"#) })
            #expect(allowed.lines.contains { $0.contains(#""event":"compared""#) && $0.contains("\"skipped\":\(high - low)") },
                    "\(allowed.stdout)")

            // The live consumer re-read the partition from the start after its stored position
            // proved to be another cluster's (as after `backbone dev` restarted): the model may
            // hold records the topic no longer has. A rebuild refuses to drop them; a dry run
            // says so; --allow-gaps goes on.
            _ = try await stack.client.execute("UPDATE consumer_offsets SET history_lost_at = now() WHERE group_id = 'progress-projector'")
            let lost = try await CLIProcess.run(["rebuild", "progress"], environment: stack.environment)
            #expect(lost.status == 1 && lost.stderr.contains("the live model holds records its topics no longer have")
                        && lost.stderr.contains("\(Topics.readingEvents) partition 0") && lost.stderr.contains("--allow-gaps"),
                    "\(lost.stderr)")
            #expect(try await !stack.schemaExists("rebuild_progress"))
            let lostDry = try await CLIProcess.run(["rebuild", "progress", "--allow-gaps", "--dry-run"], environment: stack.environment)
            #expect(lostDry.status == 0, "\(lostDry.stderr)")

            let help = try await CLIProcess.run(["rebuild", "--help"], environment: [:])
            #expect(help.status == 0 && help.stdout.contains("examples:") && help.stdout.contains("backbone rebuild progress --dry-run"))
            let unknown = try await CLIProcess.run(["rebuild", "everything"], environment: stack.environment)
            #expect(unknown.status == 2 && unknown.stderr.contains("progress, analytics, catalog, learning or social"))
            let noDatabase = try await CLIProcess.run(["rebuild", "progress"], environment: ["KAFKA_BROKERS": stack.cluster.bootstrapServers])
            #expect(noDatabase.status == 2 && noDatabase.stderr.contains("DATABASE_URL is not set"))
        }
    }
}
