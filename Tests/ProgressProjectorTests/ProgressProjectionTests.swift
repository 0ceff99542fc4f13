import Auth
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import Kafka
import Postgres
import ProgressProjector
import Projection
import ServiceRuntime
import Testing

@Suite("Progress projection", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(5)))
struct ProgressProjectionTests {
    /// Runs the projector's consumer in this process until `body` returns.
    func withProjector<T>(_ harness: ProgressHarness, group: String, topic: String,
                          _ body: () async throws -> T) async throws -> T {
        let service = ProgressProjectorService(
            context: harness.context(),
            configuration: ProgressConfiguration(eventsTopic: topic, progressTopic: topic + ".progress", groupID: group))
        let runner = service.makeRunner()
        let task = Task { try await runner.run() }
        defer { task.cancel() }
        let result = try await body()
        task.cancel()
        _ = await task.result
        return result
    }

    @Test("out-of-order, repeated and interleaved events give the state of the in-order stream")
    func orderIndependence() async throws {
        let harness = try await ProgressHarness(databasePrefix: "progress_order")
        let ordered = ReadingStream.sessions(users: 4, materials: 3, sessionsPerPair: 3, seed: 7)
        try harness.createTopics(["ordered.events", "ordered.events.progress", "shuffled.events", "shuffled.events.progress"])
        try await harness.produce(ordered, to: "ordered.events")
        try await harness.produce(ReadingStream.disordered(ordered, seed: 11), to: "shuffled.events")

        let inOrder = try await withProjector(harness, group: "g-ordered", topic: "ordered.events") {
            let caughtUp = try await Integration.eventually { try await harness.caughtUp(group: "g-ordered", topic: "ordered.events") }
            #expect(caughtUp)
            return try await harness.progressDump()
        }
        try await harness.reset()
        let disordered = try await withProjector(harness, group: "g-shuffled", topic: "shuffled.events") {
            let caughtUp = try await Integration.eventually { try await harness.caughtUp(group: "g-shuffled", topic: "shuffled.events") }
            #expect(caughtUp)
            return try await harness.progressDump()
        }
        #expect(inOrder.count == 12)
        #expect(disordered == inOrder)

        // Spot-check the rules against the stream itself.
        let user0 = ordered.filter { $0.userId == "user-0" && $0.materialId == "material-0" }
        let seconds = user0.reduce(0) { $0 + $1.activeSecondsDelta }
        let row = try #require(try await harness.client.query(
            "SELECT total_active_seconds, status FROM reading_progress WHERE user_id = 'user-0' AND material_id = 'material-0'").first)
        #expect(try row.decode(Int64.self, "total_active_seconds") == Int64(seconds))
        let completed = user0.contains { $0.eventType == .markedAsRead }
        #expect(try row.decode(String.self, "status") == (completed ? "completed" : "in_progress"))
        await harness.close()
    }

    @Test("markedAsRead completes for good; the latest position by client time wins; other users are untouched")
    func rules() async throws {
        let harness = try await ProgressHarness(databasePrefix: "progress_rules")
        try harness.createTopics(["rules.events", "rules.events.progress"])
        let t0 = Date(timeIntervalSince1970: 1_796_000_000)
        func event(_ id: String, _ user: String, _ type: ReadingEventType, at seconds: Double, seq: Int,
                   position: ReadingPosition? = nil, delta: Int = 10) -> ReadingEventRecord {
            // The same short name is the same UUID (the event's rule asks for one).
            let uuid = "00000000-0000-4000-8000-" + String(repeating: "0", count: 12 - 2 * id.utf8.count)
                + id.utf8.map { String(format: "%02x", $0) }.joined()
            return ReadingEventRecord(userId: user, receivedAt: t0, item: ReadingEventUploadItem(
                eventId: uuid, clientSessionId: "s", readingTargetType: .knowledgeSource, materialId: "book", eventType: type,
                position: position, activeSecondsDelta: delta, clientTimestamp: t0.addingTimeInterval(seconds),
                clientTimezoneOffsetMinutes: 0, sequence: seq, platform: "iOS", appVersion: "1"))
        }
        // Arrival order differs from client time: the page-9 event is the latest by time.
        try await harness.produce([
            event("e3", "alice", .heartbeat, at: 30, seq: 3, position: .page(9, of: 10)),
            event("e1", "alice", .opened, at: 10, seq: 1),
            event("e2", "alice", .heartbeat, at: 20, seq: 2, position: .page(4, of: 10)),
            event("e4", "alice", .markedAsRead, at: 40, seq: 4),
            event("e5", "alice", .positionChanged, at: 50, seq: 5, position: .page(2, of: 10)),
            event("e2", "alice", .heartbeat, at: 20, seq: 2, position: .page(4, of: 10)),
            event("b1", "bob", .heartbeat, at: 60, seq: 1, position: .fraction(0.5)),
        ], to: "rules.events")
        try await withProjector(harness, group: "g-rules", topic: "rules.events") {
            let caughtUp = try await Integration.eventually { try await harness.caughtUp(group: "g-rules", topic: "rules.events") }
            #expect(caughtUp)
        }
        let alice = try #require(try await harness.client.query(
            "SELECT status, progress_percent, total_active_seconds, last_position::text AS p FROM reading_progress WHERE user_id = 'alice'").first)
        #expect(try alice.decode(String.self, "status") == "completed")
        #expect(try alice.decode(Double.self, "progress_percent") == 100)
        #expect(try alice.decode(Int64.self, "total_active_seconds") == 50, "e2 counted once")
        #expect(try alice.decode(String.self, "p").contains(#""page": 2"#), "position follows the latest event even after completion")
        let bob = try #require(try await harness.client.query(
            "SELECT status, progress_percent, total_active_seconds FROM reading_progress WHERE user_id = 'bob'").first)
        #expect(try bob.decode(String.self, "status") == "in_progress")
        #expect(try bob.decode(Double.self, "progress_percent") == 50)
        #expect(try bob.decode(Int64.self, "total_active_seconds") == 10)
        await harness.close()
    }

    @Test("every poison record (hostile bytes, wrong shapes and types, absurd ids, overflowing numbers) goes to the dead-letter topic with its origin, and the stream behind them is still projected")
    func poisonRecord() async throws {
        let harness = try await ProgressHarness(databasePrefix: "progress_poison")
        try harness.createTopics(["poison.events", "poison.events.progress"], partitions: 1)
        try harness.createTopics(["poison.events.dlq"], partitions: 1)
        let good = ReadingStream.sessions(users: 1, materials: 1, sessionsPerPair: 1, seed: 3)
        let valid = String(decoding: try GoldenFixture.readingEventRecord(), as: UTF8.self)
        let poison = HostileRecords.shapeless() + (try HostileRecords.absurdField("userId", in: valid))
            + (try HostileRecords.absurdField("activeSecondsDelta", in: valid))
        try await harness.produce(Array(good.prefix(2)), to: "poison.events")
        try await harness.produceRaw(poison, key: "user-0", to: "poison.events")
        try await harness.produce(Array(good.dropFirst(2)), to: "poison.events")
        try await withProjector(harness, group: "g-poison", topic: "poison.events") {
            let caughtUp = try await Integration.eventually { try await harness.caughtUp(group: "g-poison", topic: "poison.events", partitions: 1) }
            #expect(caughtUp)
        }
        let seconds = try #require(try await harness.client.query("SELECT total_active_seconds FROM reading_progress").first)
        #expect(try seconds.decode(Int64.self, "total_active_seconds") == Int64(good.reduce(0) { $0 + $1.activeSecondsDelta }))
        let letters = try await TopicReader.read("poison.events.dlq", bootstrapServers: harness.cluster.bootstrapServers, count: poison.count)
        let decoded = try letters.map { try ContractCoding.decode(DeadLetterRecord.self, from: $0.value) }
        #expect(Set(decoded.map(\.offset)) == Set((2..<Int64(2 + poison.count))))
        #expect(decoded.allSatisfy { $0.originalTopic == "poison.events" && $0.partition == 0 && !$0.error.isEmpty })
        await harness.close()
    }

    @Test("two projector instances split the partitions; a rebalance mid-stream counts nothing twice")
    func twoInstances() async throws {
        let harness = try await ProgressHarness(databasePrefix: "progress_pair")
        try harness.createTopics(["pair.events", "pair.events.progress"])
        let events = ReadingStream.sessions(users: 12, materials: 2, sessionsPerPair: 4, seed: 21)
        let half = events.count / 2
        try await harness.produce(Array(events.prefix(half)), to: "pair.events")
        let configuration = ProgressConfiguration(eventsTopic: "pair.events", progressTopic: "pair.events.progress", groupID: "g-pair",
                                                  maxBatchRecords: 20)
        let first = ProgressProjectorService(context: harness.context(), configuration: configuration).makeRunner()
        let second = ProgressProjectorService(context: harness.context(), configuration: configuration).makeRunner()
        let a = Task { try await first.run() }
        try await Task.sleep(for: .milliseconds(500))
        let b = Task { try await second.run() }
        try await harness.produce(Array(events.dropFirst(half)), to: "pair.events")
        let caughtUp = try await Integration.eventually(timeout: .seconds(60)) { try await harness.caughtUp(group: "g-pair", topic: "pair.events") }
            #expect(caughtUp)
        let owners = try await harness.client.query("SELECT count(DISTINCT owner)::bigint AS n FROM consumer_offsets WHERE group_id = 'g-pair'")
        #expect(try owners.first?.decode(Int64.self, "n") == 2, "both members own partitions")
        a.cancel()
        b.cancel()
        _ = await (a.result, b.result)
        let total = try await harness.client.query("SELECT sum(total_active_seconds)::bigint AS n FROM reading_progress")
        #expect(try total.first?.decode(Int64.self, "n") == Int64(events.reduce(0) { $0 + $1.activeSecondsDelta }))
        await harness.close()
    }

    @Test("GET progress: not_started for unread, 400 for an id ingest would reject, 401 without a token, only the token's user")
    func queries() async throws {
        let harness = try await ProgressHarness(databasePrefix: "progress_api")
        try harness.createTopics(["api.events", "api.events.progress"])
        let events = ReadingStream.sessions(users: 2, materials: 1, sessionsPerPair: 1, seed: 5).filter { $0.eventType != .markedAsRead }
        try await harness.produce(events, to: "api.events")
        try await withProjector(harness, group: "g-api", topic: "api.events") {
            let caughtUp = try await Integration.eventually { try await harness.caughtUp(group: "g-api", topic: "api.events") }
            #expect(caughtUp)
        }
        let router = ProgressProjectorService(context: harness.context()).router()
        let codec = harness.context().authenticator.codec
        func get(_ path: String, as user: String?) async -> HTTPResponse {
            var headers = HTTPHeaders()
            if let user { headers.add(name: "Authorization", value: "Bearer " + codec.issue(userID: user)) }
            return await router.respond(to: HTTPRequest(method: .get, path: path, headers: headers))
        }
        #expect(await get("/materials/material-0/reading-progress", as: nil).status == .unauthorized)
        let unread = await get("/materials/unknown/reading-progress", as: "user-0")
        #expect(try ContractCoding.decode(ReadingProgressResponse.self, from: unread.body).status == .notStarted)
        let longest = await get("/materials/\(String(repeating: "m", count: Identifier.maxBytes))/reading-progress", as: "user-0")
        #expect(longest.status == .ok)
        for impossible in [String(repeating: "m", count: Identifier.maxBytes + 1), "lesson\u{1}42", "lesson\u{85}"] {
            let response = await get("/materials/\(impossible)/reading-progress", as: "user-0")
            #expect(response.status == .badRequest, "\(impossible.utf8.count) bytes")
            #expect(String(decoding: response.body, as: UTF8.self).contains("\"INVALID_FIELD\""))
        }
        let read = try ContractCoding.decode(ReadingProgressResponse.self, from: await get("/materials/material-0/reading-progress", as: "user-0").body)
        #expect(read.status == .inProgress && read.lastPosition != nil)
        #expect(read.totalActiveSeconds == events.filter { $0.userId == "user-0" }.reduce(0) { $0 + $1.activeSecondsDelta })
        let next = try ContractCoding.decode(ContinueLearningResponse.self, from: await get("/learning/continue", as: "user-1").body)
        #expect(next.type == .material && next.materialId == "material-0")
        let nobody = try ContractCoding.decode(ContinueLearningResponse.self, from: await get("/learning/continue", as: "stranger").body)
        #expect(nobody.type == .none)
        await harness.close()
    }
}
