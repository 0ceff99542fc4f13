import Auth
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import Kafka
import Lifecycle
import Postgres
import Projection
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime
import Synchronization
import Testing
@testable import TranscodeWorker

/// A pipeline whose behaviour the request's title chooses: `bad` packages fail, `flaky`
/// ones hit one transient store failure first, `slow` ones take a while; the rest succeed
/// through every stage. The job machinery around it — intake, claims, leases, the status
/// outbox, retries — is the real one.
final class ScriptedPipeline: TranscodePipeline {
    let transientFailures = Mutex<[String: Int]>([:])
    let runs = Mutex<[String: Int]>([:])

    struct StoreUnavailable: Error {}

    func transcode(_ request: RoomTranscodeRequest,
                   enter: @escaping @Sendable (TranscodeStage) async throws -> Void) async throws -> TranscodeOutputs {
        runs.withLock { $0[request.versionId, default: 0] += 1 }
        try await enter(.downloading)
        if request.title == "flaky", transientFailures.withLock({ state in
            defer { state[request.versionId, default: 0] += 1 }
            return state[request.versionId, default: 0] == 0
        }) {
            throw StoreUnavailable()
        }
        if request.title == "slow" { try await Task.sleep(for: .seconds(3)) }
        try await enter(.validating)
        if request.title == "bad" { throw TranscodeFailure("source.usdz is not a zip archive (no end of central directory)") }
        for stage in [TranscodeStage.parsing, .layering, .exporting, .thumbnail] { try await enter(stage) }
        let base = "rooms/\(request.roomId)/\(request.versionId)/"
        return TranscodeOutputs(manifestKey: base + "layer_manifest.json", thumbnailKey: base + "thumbnail.png",
                                thumbnailWebpKey: base + "thumbnail.webp", glbKeys: [base + "layers/walls.glb"], qualityGrade: "B")
    }
}

struct FixedLinks: OutputLinks {
    func presign(_ keys: [String]) async throws -> ([String: String], Date) {
        (Dictionary(uniqueKeysWithValues: keys.map { ($0, "http://127.0.0.1:1/\($0)?X-Amz-Signature=test") }), Date().addingTimeInterval(900))
    }
}

@Suite("transcode worker: intake, claims, statuses, retry", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(3)))
struct JobLifecycleTests {
    static let secret = "transcode-test-secret-0123456789"

    final class Harness: BrokerAndDatabase, @unchecked Sendable {
        let requests = "t.transcode.requests"
        let statuses = "t.transcode.status"
        let uploads = "t.room.uploads"

        init() async throws {
            try await super.init(databasePrefix: "transcode_jobs", migrations: TranscodeWorkerService.migrations)
            for topic in [requests, statuses, uploads, Topics.deadLetter(for: requests)] { try cluster.createTopic(topic, partitions: 3) }
        }

        /// `tokens`: what tokens are checked with besides `JobLifecycleTests.secret` (a JWKS).
        func service(_ pipeline: any TranscodePipeline, links: any OutputLinks = FixedLinks(), lease: Duration = .seconds(30),
                     workerID: String = "worker-a", tokens: TokenVerificationSettings = TokenVerificationSettings()) -> TranscodeWorkerService {
            var configuration = CommonConfiguration(kafkaBrokers: cluster.bootstrapServers, databaseURL: database.url,
                                                    jwtSecret: JobLifecycleTests.secret, httpPort: 0, kafkaFetchWait: EmbeddedKafkaCluster.fetchWait)
            configuration.tokenVerification = tokens
            let context = ServiceContext(name: "transcode-worker", configuration: configuration, database: client, producer: producer,
                                         admin: admin, metrics: MetricsRegistry(), logger: .disabled)
            var settings = TranscodeConfiguration()
            settings.requestsTopic = requests
            settings.statusTopic = statuses
            settings.uploadsTopic = uploads
            settings.lease = lease
            settings.pollInterval = .milliseconds(100)
            settings.maxBackoff = .milliseconds(200)
            settings.outboxInterval = .milliseconds(200)
            return TranscodeWorkerService(context: context, configuration: settings, pipeline: pipeline, links: links,
                                          workerID: workerID)
        }

        func request(title: String, owner: String = "owner-1", visibility: RoomVisibility = .private) -> RoomTranscodeRequest {
            let room = UUID().uuidString.lowercased()
            let version = UUID().uuidString.lowercased()
            let complete = RoomVersionCompleteRequest(
                roomId: room, versionId: version, title: title, tags: ["kitchen"], visibility: visibility,
                source: RoomSource(usdzKey: "rooms/\(room)/\(version)/source.usdz", usdzBytes: 1_000,
                                   roomplanJsonKey: "rooms/\(room)/\(version)/roomplan.json", roomplanJsonBytes: 100),
                redactions: [])
            return RoomTranscodeRequest(ownerUserId: owner, request: complete, requestedAt: Date())
        }

        func produce(_ requests: [RoomTranscodeRequest]) async throws {
            let records = try requests.map {
                KafkaProducerRecord(topic: self.requests, key: Array($0.roomId.utf8), value: try ContractCoding.encode($0))
            }
            for result in await producer.send(records) { _ = try result.get() }
        }

        func produceRaw(_ values: [[UInt8]]) async throws {
            for result in await producer.send(values.map { KafkaProducerRecord(topic: requests, key: Array("k".utf8), value: $0) }) {
                _ = try result.get()
            }
        }

        /// Every status published so far, grouped by version in publish order.
        func published() async throws -> [String: [RoomTranscodeStatus]] {
            var total: Int64 = 0
            for p in 0..<3 { total += try await admin.watermarks(topic: statuses, partition: Int32(p)).high }
            let records = try await TopicReader.read(statuses, bootstrapServers: cluster.bootstrapServers, count: Int(total))
            var byVersion: [String: [RoomTranscodeStatus]] = [:]
            for record in records.sorted(by: { ($0.partition, $0.offset) < ($1.partition, $1.offset) }) {
                let status = try ContractCoding.decode(RoomTranscodeStatus.self, from: record.value)
                byVersion[status.versionId, default: []].append(status)
            }
            return byVersion
        }

        func jobStatus(_ version: String) async throws -> String? {
            try await client.query("SELECT status FROM transcode_jobs WHERE version_id = $1", [version]).first?.decode(String.self, "status")
        }

    }

    /// Runs the service's background parts until `body` returns.
    static func running<T>(_ service: TranscodeWorkerService, only names: Set<String>? = nil,
                           _ body: (Router) async throws -> T) async throws -> T {
        let parts = service.parts()
        let tasks = parts.background.filter { names?.contains($0.name) ?? true }.map { part in Task { try await part.run() } }
        defer { tasks.forEach { $0.cancel() } }
        let result = try await body(parts.router)
        for task in tasks { task.cancel(); _ = await task.result }
        return result
    }

    static func call(_ router: Router, _ method: HTTPMethod, _ path: String, user: String) async -> HTTPResponse {
        let token = JWTCodec(secret: secret).issue(userID: user, ttl: 600)
        return await router.respond(to: HTTPRequest(method: method, path: path, headers: ["Authorization": "Bearer \(token)"]))
    }

    @Test("a request becomes ready through every stage, its statuses published in order, and a redelivery changes nothing")
    func readyThroughEveryStage() async throws {
        let harness = try await Harness()
        let pipeline = ScriptedPipeline()
        let request = harness.request(title: "kitchen")
        try await Self.running(harness.service(pipeline)) { router in
            try await harness.produce([request])
            #expect(try await Integration.eventually { try await harness.jobStatus(request.versionId) == "ready" })
            #expect(try await Integration.eventually { try await harness.published()[request.versionId]?.last?.status == .ready })
            // Redelivered (a replay, a resend): the finished version is not transcoded again.
            try await harness.produce([request])
            try await Task.sleep(for: .seconds(1))

            let statuses = try await harness.published()[request.versionId] ?? []
            #expect(statuses.map(\.status) == [.queued] + Array(repeating: .transcoding, count: 6) + [.ready])
            #expect(statuses.compactMap(\.stage) == TranscodeStage.allCases.map(\.rawValue))
            #expect(statuses.last?.manifestKey == "rooms/\(request.roomId)/\(request.versionId)/layer_manifest.json")
            #expect(statuses.last?.qualityGrade == "B")
            // One thumbnail everywhere: the `ready` status (the app's broadcast) names the WebP the catalog names.
            #expect(statuses.last?.thumbnailKey == "rooms/\(request.roomId)/\(request.versionId)/thumbnail.webp")
            #expect(statuses.allSatisfy { $0.ownerUserId == "owner-1" && $0.visibility == .private })
            #expect(pipeline.runs.withLock { $0[request.versionId] } == 1)

            let owner = await Self.call(router, .get, "/rooms/versions/\(request.versionId)", user: "owner-1")
            #expect(owner.status == .ok)
            let details = try ContractCoding.decode(RoomVersionDetails.self, from: owner.body)
            #expect(details.status == .ready && details.qualityGrade == "B" && details.attempts == 1)
            #expect(details.outputs?.layers["walls"]?.contains("layers/walls.glb") == true)
            // A private room's version does not exist for anyone else.
            #expect(await Self.call(router, .get, "/rooms/versions/\(request.versionId)", user: "someone-else").status == .notFound)
        }
        await harness.close()
    }

    @Test("a bad package fails with its code and reason; the owner retries it at most three attempts in all")
    func failedAndRetryLimit() async throws {
        let harness = try await Harness()
        let request = harness.request(title: "bad")
        try await Self.running(harness.service(ScriptedPipeline())) { router in
            try await harness.produce([request])
            #expect(try await Integration.eventually { try await harness.jobStatus(request.versionId) == "failed" })
            let path = "/rooms/versions/\(request.versionId)/retry"
            #expect(await Self.call(router, .post, path, user: "intruder").status == .notFound)
            for attempt in 2...3 {
                let response = await Self.call(router, .post, path, user: "owner-1")
                #expect(response.status == .accepted)
                #expect(try ContractCoding.decode(RoomVersionRetryAccepted.self, from: response.body).attempt == attempt)
                #expect(try await Integration.eventually { try await harness.jobStatus(request.versionId) == "failed" })
            }
            let refused = await Self.call(router, .post, path, user: "owner-1")
            #expect(refused.status == .conflict)
            #expect(String(decoding: refused.body, as: UTF8.self).contains("RETRY_LIMIT_REACHED"))

            #expect(try await Integration.eventually { try await harness.published()[request.versionId]?.filter { $0.status == .failed }.count == 3 })
            let failed = try await harness.published()[request.versionId]?.last
            #expect(failed?.code == .roomTranscodeFailed)
            #expect(failed?.reason?.contains("not a zip archive") == true)
            let details = try ContractCoding.decode(RoomVersionDetails.self,
                                                    from: await Self.call(router, .get, "/rooms/versions/\(request.versionId)", user: "owner-1").body)
            #expect(details.status == .failed && details.attempts == 3 && details.error?.code == .roomTranscodeFailed)
        }
        await harness.close()
    }

    @Test("a transient store failure postpones the job and never fails it; a ready version cannot be retried")
    func transientFailureRetried() async throws {
        let harness = try await Harness()
        let pipeline = ScriptedPipeline()
        let request = harness.request(title: "flaky")
        try await Self.running(harness.service(pipeline)) { router in
            try await harness.produce([request])
            #expect(try await Integration.eventually { try await harness.jobStatus(request.versionId) == "ready" })
            #expect(pipeline.runs.withLock { $0[request.versionId] } == 2)
            let statuses = try await harness.published()[request.versionId] ?? []
            #expect(!statuses.contains { $0.status == .failed })
            let retry = await Self.call(router, .post, "/rooms/versions/\(request.versionId)/retry", user: "owner-1")
            #expect(retry.status == .conflict)
            #expect(String(decoding: retry.body, as: UTF8.self).contains("VERSION_NOT_FAILED"))
        }
        await harness.close()
    }

    @Test("a job whose worker died is taken over once its lease runs out, and ends ready exactly once")
    func deadWorkerTakenOver() async throws {
        let harness = try await Harness()
        let request = harness.request(title: "kitchen")
        // Worker A claims the job and dies (never renews, never finishes).
        try await harness.produce([request])
        let intakeOnly = harness.service(ScriptedPipeline(), lease: .seconds(2), workerID: "worker-a")
        _ = try await Self.running(intakeOnly, only: ["transcode-intake"]) { _ throws in
            #expect(try await Integration.eventually { try await harness.jobStatus(request.versionId) == "queued" })
        }
        let dead = TranscodeJobStore(database: harness.client, workerID: "worker-dead", lease: .seconds(2))
        let claimed = try #require(try await dead.claim())
        #expect(claimed.request.versionId == request.versionId)
        try await dead.enter(.downloading, of: claimed)
        // Another worker does not get it while the lease holds.
        let other = TranscodeJobStore(database: harness.client, workerID: "worker-b", lease: .seconds(2))
        #expect(try await other.claim() == nil)
        let pipeline = ScriptedPipeline()
        try await Self.running(harness.service(pipeline, lease: .seconds(2), workerID: "worker-b")) { _ throws in
            #expect(try await Integration.eventually { try await harness.jobStatus(request.versionId) == "ready" })
            #expect(try await Integration.eventually { try await harness.published()[request.versionId]?.last?.status == .ready })
        }
        let statuses = try await harness.published()[request.versionId] ?? []
        #expect(statuses.filter { $0.status == .ready }.count == 1)
        // The dead worker cannot write over the job it lost.
        let stale = TranscodeJob(request: request, attempt: 1, transientFailures: 0)
        await #expect(throws: LostClaim.self) { try await dead.enter(.exporting, of: stale) }
        await harness.close()
    }

    @Test("records that cannot become jobs go to the DLQ and the good one behind them still runs")
    func poisonToDeadLetters() async throws {
        let harness = try await Harness()
        var hostile = harness.request(title: "kitchen")
        hostile.roomId = String(repeating: "r", count: 300)
        var control = harness.request(title: "kitchen")
        control.ownerUserId = "user\u{1}id"
        let good = harness.request(title: "kitchen")
        try await Self.running(harness.service(ScriptedPipeline())) { _ in
            try await harness.produceRaw([Array("not json".utf8), Array(#"{"roomId":5}"#.utf8), [0xff, 0x00, 0xfe],
                                          try ContractCoding.encode(hostile), try ContractCoding.encode(control)])
            try await harness.produce([good])
            #expect(try await Integration.eventually { try await harness.jobStatus(good.versionId) == "ready" })
            // The poison records sit on another partition than the good one: wait for them too.
            // Two consumer groups read the requests (the intake and the room catalog): each
            // dead-letters every poison record once.
            let dlq = Topics.deadLetter(for: harness.requests)
            #expect(try await Integration.eventually {
                var total: Int64 = 0
                for p in 0..<3 { total += try await harness.admin.watermarks(topic: dlq, partition: Int32(p)).high }
                return total == 10
            })
            let letters = try await TopicReader.read(dlq, bootstrapServers: harness.cluster.bootstrapServers, count: 10)
                .map { try ContractCoding.decode(DeadLetterRecord.self, from: $0.value) }
            #expect(letters.allSatisfy { $0.originalTopic == harness.requests })
            #expect(letters.filter { $0.consumerGroup == "transcode-worker" }.count == 5)
            #expect(letters.filter { $0.consumerGroup == "room-catalog" }.count == 5)
        }
        let jobs = try await harness.client.query("SELECT count(*)::bigint AS n FROM transcode_jobs")
        #expect(try jobs.first?.decode(Int64.self, "n") == 1)
        await harness.close()
    }
}
