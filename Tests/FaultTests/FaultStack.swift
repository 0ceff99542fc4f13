import Auth
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Hashing
import Kafka
import ObjectStore
import Postgres
import ServiceLogging
import Synchronization

/// The stack as separate processes: the service executables from `.build` as child
/// processes, over an embedded broker (librdkafka's mock cluster) and a private PostgreSQL
/// cluster owned by the test, so that faults can be injected into each of them: SIGKILL of
/// a service, `pg_ctl stop` / `restart -m immediate`, brokers set down and up. All on loopback.
final class FaultStack: @unchecked Sendable {
    // @unchecked: mutable state (`kafka`, `processes`) is only touched by the owning test, sequentially.
    static let services = ["ingest", "progress-projector", "analytics-aggregator", "realtime-notifier"]
    /// The services of this stack: the four above, and the transcode worker when it has an object store.
    let services: [String]
    /// The object store of room uploads (SeaweedFS), given to ingest and the transcode worker.
    let s3: S3Configuration?

    private(set) var kafka: EmbeddedKafkaCluster
    let postgres: PrivatePostgresCluster
    let databaseURL: String
    /// The witness's own connections to the read models (reconnect after an outage).
    let client: PostgresClient
    private(set) var producer: KafkaProducer
    private(set) var admin: KafkaAdmin
    let codec: JWTCodec
    let secret = "fault-suite-secret-0123456789abcdef"
    let ports: [String: Int]
    private(set) var processes: [String: [ServiceProcess]] = [:]
    /// Settings added to a service's environment (by service name), e.g. shorter intervals.
    var extraEnvironment: [String: [String: String]] = [:]
    /// Shutdown bound given to every service (`SHUTDOWN_TIMEOUT_SECONDS`).
    let shutdownTimeoutSeconds = 5
    let directory: String

    init(name: String, s3: S3Configuration? = nil) async throws {
        self.s3 = s3
        services = Self.services + (s3 == nil ? [] : ["transcode-worker"])
        directory = NSTemporaryDirectory() + "backbone-fault-\(name)-\(UInt32.random(in: 0...UInt32.max))"
        kafka = try EmbeddedKafkaCluster(brokers: 1)
        postgres = PrivatePostgresCluster(directory: directory + "/pg", port: Integration.stablePort(), database: "backbone", logger: .disabled)
        databaseURL = try await postgres.start()
        client = PostgresClient(configuration: PostgresConfiguration(url: databaseURL, maxConnections: 2), logger: .disabled)
        producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: kafka.bootstrapServers), logger: .disabled)
        admin = try KafkaAdmin(bootstrapServers: kafka.bootstrapServers, logger: .disabled)
        codec = JWTCodec(secret: secret)
        var ports: [String: Int] = [:]
        // Every service is killed and started again on its port: ports no outgoing connection takes meanwhile.
        for service in services { ports[service] = Integration.stablePort() }
        self.ports = ports
        try createTopics()
    }

    func createTopics() throws {
        for topic in Topics.all { try kafka.createTopic(topic.name, partitions: topic.partitions) }
    }

    func environment(_ service: String, instance: Int) -> [String: String] {
        var environment = [
            "KAFKA_BROKERS": kafka.bootstrapServers, "DATABASE_URL": databaseURL, "JWT_SECRET": secret,
            "HTTP_HOST": "127.0.0.1",
            // A second instance of a service answers on a port of its own.
            "HTTP_PORT": String(instance == 0 ? ports[service]! : Integration.stablePort()),
            "SHUTDOWN_TIMEOUT_SECONDS": String(shutdownTimeoutSeconds), "KAFKA_SESSION_TIMEOUT_MS": "6000",
            "INGEST_RATE_LIMIT_PER_SECOND": "1000", "INGEST_RATE_LIMIT_BURST": "1000",
        ]
        if let s3, service == "ingest" || service == "transcode-worker" {
            environment.merge(s3.environment) { _, new in new }
            // Short leases: a job whose worker was killed is taken over within seconds.
            environment.merge(["TRANSCODE_LEASE_MS": "2000", "TRANSCODE_POLL_MS": "100", "TRANSCODE_OUTBOX_INTERVAL_MS": "300"]) { _, new in new }
        }
        environment.merge(extraEnvironment[service] ?? [:]) { _, new in new }
        return environment
    }

    /// Starts (another instance of) `service`.
    @discardableResult
    func spawn(_ service: String) throws -> ServiceProcess {
        let instance = processes[service]?.count ?? 0
        let process = try ServiceProcess(executable: service, environment: environment(service, instance: instance))
        processes[service, default: []].append(process)
        return process
    }

    /// SIGKILL of every instance of `service` (no shutdown code runs).
    func kill(_ service: String) {
        for process in processes[service] ?? [] { process.kill() }
        processes[service] = []
    }

    /// SIGKILL of one instance of `service`.
    func kill(_ service: String, instance: Int) {
        guard let process = processes[service]?[instance] else { return }
        process.kill()
        processes[service]?.remove(at: instance)
    }

    func startAll() throws { for service in services { try spawn(service) } }

    /// SIGTERM of every process; returns the longest time one took to exit.
    func terminateAll() -> Duration {
        var longest = Duration.zero
        for (_, instances) in processes {
            for process in instances {
                let started = ContinuousClock.now
                process.terminate()
                longest = max(longest, ContinuousClock.now - started)
            }
        }
        processes = [:]
        return longest
    }

    /// Every live process's log tail (for failure messages).
    var logs: String {
        processes.flatMap { name, instances in instances.map { "--- \(name)\n\($0.log.suffix(3000))" } }.joined(separator: "\n")
    }

    // MARK: - Infrastructure faults

    func stopPostgres() async { await postgres.stop() }

    func startPostgres() async throws { _ = try await postgres.start() }

    /// `pg_ctl restart -m immediate`: the server is killed without a checkpoint and recovers from its WAL.
    func restartPostgresImmediately() async throws { try await postgres.restartImmediately() }

    func brokersDown() throws { try kafka.setAllBrokersDown() }
    func brokersUp() throws { try kafka.setAllBrokersUp() }

    // MARK: - HTTP

    struct Response: Sendable {
        let status: Int
        let headers: [String: String]
        let body: Data
        var retryAfter: String? { headers.first { $0.key.lowercased() == "retry-after" }?.value }
    }

    let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 30
        return URLSession(configuration: configuration)
    }()

    /// One request to `service`; nil when nothing answered (refused, reset, timed out).
    func http(_ method: String, _ service: String, _ path: String, token: String? = nil, body: Data? = nil,
              timeout: TimeInterval = 30) async -> Response? {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(ports[service]!)\(path)")!)
        request.httpMethod = method
        request.httpBody = body
        request.timeoutInterval = timeout
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        return await withCheckedContinuation { continuation in
            session.dataTask(with: request) { data, response, _ in
                guard let response = response as? HTTPURLResponse else { continuation.resume(returning: nil); return }
                var headers: [String: String] = [:]
                for (key, value) in response.allHeaderFields { headers["\(key)"] = "\(value)" }
                continuation.resume(returning: Response(status: response.statusCode, headers: headers, body: data ?? Data()))
            }.resume()
        }
    }

    func readiness(_ service: String) async -> Response? { await http("GET", service, "/readyz", timeout: 5) }

    /// Waits until `/readyz` of every service answers 200; returns how long it took, or nil.
    func waitReady(_ services: [String]? = nil, timeout: Duration = .seconds(30)) async -> Duration? {
        let services = services ?? self.services
        let started = ContinuousClock.now
        let ready = await Integration.eventually(timeout: timeout, every: .milliseconds(200)) {
            for service in services where await readiness(service)?.status != 200 { return false }
            return true
        }
        return ready ? ContinuousClock.now - started : nil
    }

    /// Registers the materials the load reads (catalog upsert with a service token).
    func registerMaterials(_ ids: [String]) async throws {
        let token = codec.issue(userID: "catalog", role: "service")
        for id in ids {
            let body = Data(#"{"readingTargetType":"knowledgeSource","knowledgeBaseId":"kb-1"}"#.utf8)
            let answer = await http("PUT", "ingest", "/materials/\(id)", token: token, body: body)
            guard let answer, answer.status == 200 || answer.status == 201 else {
                throw PostgresError(code: .queryFailed, message: "material \(id) not registered: \(answer?.status ?? 0)")
            }
        }
    }

    // MARK: - Hostile records

    /// Produces `records` straight to `topic` (bypassing ingest), keyed `key`.
    func produceRaw(_ values: [[UInt8]], key: String, to topic: String) async throws {
        for result in await producer.send(values.map { KafkaProducerRecord(topic: topic, key: Array(key.utf8), value: $0) }) {
            _ = try result.get()
        }
    }

    /// Dead letters on `<topic>.dlq` (up to its high watermarks).
    func deadLetters(of topic: String) async throws -> [DeadLetterRecord] {
        let dlq = Topics.deadLetter(for: topic)
        // A client of its own each time: one that lived through the broker's outage may keep
        // timing out on metadata it cached then.
        let admin = try KafkaAdmin(bootstrapServers: kafka.bootstrapServers, timeout: .seconds(5), logger: .disabled)
        let high = try await admin.watermarks(topic: dlq, partition: 0).high
        guard high > 0 else { return [] }
        return try await TopicReader.read(dlq, bootstrapServers: kafka.bootstrapServers, count: Int(high))
            .map { try ContractCoding.decode(DeadLetterRecord.self, from: $0.value) }
    }

    // MARK: - The broker replaced (`backbone dev` restarted in the same folder)

    /// Stops the services and the broker, and starts an empty broker (new address, no
    /// records) over the same PostgreSQL, as a restart of `backbone dev` in the same folder does.
    func replaceBroker() async throws {
        _ = terminateAll()
        await producer.shutdown()
        kafka.shutdown()
        kafka = try EmbeddedKafkaCluster(brokers: 1)
        producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: kafka.bootstrapServers), logger: .disabled)
        admin = try KafkaAdmin(bootstrapServers: kafka.bootstrapServers, logger: .disabled)
        try createTopics()
    }

    /// Runs `body` over a new stack and always tears it down (processes, PostgreSQL, broker).
    static func with<T>(_ name: String, s3: S3Configuration? = nil, _ body: (FaultStack) async throws -> T) async throws -> T {
        try await withResource(try await FaultStack(name: name, s3: s3), release: { await $0.close() }, body)
    }

    func close() async {
        _ = terminateAll()
        await producer.shutdown()
        await client.close()
        await postgres.stop()
        kafka.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// What the load generator sent and what ingest answered.
struct ReadingLoad: Sendable {
    struct Sent: Sendable {
        let userID: String
        let materialID: String
        let eventID: String
        let seconds: Int
    }

    var nextSequence = 0
    var seed: UInt64

    init(seed: UInt64) { self.seed = seed }

    /// A batch of heartbeats for one user: (request body, the events in it).
    mutating func batch(user: Int, materials: [String], size: Int) -> (Data, [Sent]) {
        var rng = SplitMix64(state: seed)
        seed = rng.next()
        var items: [ReadingEventUploadItem] = []
        var sent: [Sent] = []
        let now = Date()
        for index in 0..<size {
            nextSequence += 1
            let material = materials[Int(rng.next() % UInt64(materials.count))]
            let seconds = 5 + Int(rng.next() % 11)
            let id = UUID().uuidString
            items.append(ReadingEventUploadItem(
                eventId: id, clientSessionId: "fault-\(user)", readingTargetType: .knowledgeSource, materialId: material,
                knowledgeBaseId: "kb-1", eventType: .heartbeat, position: .page(1 + index % 40, of: 40), activeSecondsDelta: seconds,
                clientTimestamp: now.addingTimeInterval(-60 + Double(index) * 0.01), clientTimezoneOffsetMinutes: 480,
                sequence: nextSequence, platform: "iOS", appVersion: "2.3.0"))
            sent.append(Sent(userID: "fault-user-\(user)", materialID: material, eventID: id, seconds: seconds))
        }
        let body = (try? ContractCoding.encode(ReadingEventBatchRequest(events: items))) ?? []
        return (Data(body), sent)
    }
}

/// The read models as the witness sees them, against what ingest accepted.
struct ReadModelAudit: Sendable, CustomStringConvertible {
    var accepted = 0
    var missingInProgress = 0
    var missingInAnalytics = 0
    /// (user, material) totals in `reading_progress` above what the accepted events add up to.
    var doubledInProgress = 0
    var doubledInAnalytics = 0
    var shortInProgress = 0
    var shortInAnalytics = 0

    var isExact: Bool {
        missingInProgress == 0 && missingInAnalytics == 0 && doubledInProgress == 0 && doubledInAnalytics == 0
            && shortInProgress == 0 && shortInAnalytics == 0
    }

    var description: String {
        "accepted \(accepted), missing progress/analytics \(missingInProgress)/\(missingInAnalytics), "
            + "doubled \(doubledInProgress)/\(doubledInAnalytics), short \(shortInProgress)/\(shortInAnalytics)"
    }

    /// Compares every accepted event with `progress_event_log`/`analytics_events`, and the
    /// totals (`reading_progress.total_active_seconds` per user and material,
    /// `analytics_daily.active_seconds` per user) with the sums of the accepted events'
    /// seconds, which is what a clean run of the same input gives.
    static func audit(_ sent: [ReadingLoad.Sent], client: PostgresClient) async throws -> ReadModelAudit {
        var audit = ReadModelAudit()
        audit.accepted = sent.count
        let ids = sent.map(\.eventID)
        func present(_ table: String) async throws -> Set<String> {
            var found = Set<String>()
            for chunk in stride(from: 0, to: ids.count, by: 5000) {
                let part = Array(ids[chunk..<min(chunk + 5000, ids.count)])
                let literal = "{" + part.joined(separator: ",") + "}"
                for row in try await client.query("SELECT event_id FROM \(table) WHERE event_id = ANY($1::text[])", [literal]) {
                    found.insert(try row.decode(String.self, "event_id"))
                }
            }
            return found
        }
        let inProgress = try await present("progress_event_log")
        let inAnalytics = try await present("analytics_events")
        audit.missingInProgress = ids.filter { !inProgress.contains($0) }.count
        audit.missingInAnalytics = ids.filter { !inAnalytics.contains($0) }.count

        var expectedPair: [String: Int64] = [:]
        var expectedUser: [String: Int64] = [:]
        for event in sent {
            expectedPair[event.userID + "|" + event.materialID, default: 0] += Int64(event.seconds)
            expectedUser[event.userID, default: 0] += Int64(event.seconds)
        }
        var pairs: [String: Int64] = [:]
        for row in try await client.query("SELECT user_id || '|' || material_id AS k, total_active_seconds::bigint AS s FROM reading_progress WHERE user_id LIKE 'fault-user-%'") {
            pairs[try row.decode(String.self, "k")] = try row.decode(Int64.self, "s")
        }
        var users: [String: Int64] = [:]
        for row in try await client.query("SELECT user_id, sum(active_seconds)::bigint AS s FROM analytics_daily WHERE user_id LIKE 'fault-user-%' GROUP BY user_id") {
            users[try row.decode(String.self, "user_id")] = try row.decode(Int64.self, "s")
        }
        for key in Set(expectedPair.keys).union(pairs.keys) {
            let got = pairs[key] ?? 0, want = expectedPair[key] ?? 0
            if got > want { audit.doubledInProgress += 1 } else if got < want { audit.shortInProgress += 1 }
        }
        for key in Set(expectedUser.keys).union(users.keys) {
            let got = users[key] ?? 0, want = expectedUser[key] ?? 0
            if got > want { audit.doubledInAnalytics += 1 } else if got < want { audit.shortInAnalytics += 1 }
        }
        return audit
    }
}

/// A steady load of reading events through ingest's HTTP API, as the app sends them: each
/// batch is resent (same events) after a 503 or a dropped connection until it is answered
/// 200, so everything it generates ends up accepted or duplicate. Every answer is checked
/// against the house rules: the only 5xx allowed is 503 with `Retry-After`.
final class ReadingLoadDriver: Sendable {
    struct Figures: Sendable {
        var accepted: [ReadingLoad.Sent] = []
        var batches = 0
        var unavailable = 0
        var unanswered = 0
        var violations: [String] = []
    }

    let figures = Mutex(Figures())
    let stopping = Atomic<Bool>(false)

    /// Runs until `stop()`, then finishes the batch in hand (up to `drainTimeout`).
    func run(stack: FaultStack, users: Int, materials: [String], batchSize: Int = 10, pause: Duration = .milliseconds(50),
             seed: UInt64, drainTimeout: Duration = .seconds(60)) async {
        var load = ReadingLoad(seed: seed)
        var user = 0
        let tokens = (0..<users).map { stack.codec.issue(userID: "fault-user-\($0)", ttl: 86_400) }
        while !stopping.load(ordering: .relaxed) {
            let (body, sent) = load.batch(user: user, materials: materials, size: batchSize)
            let deadline = ContinuousClock.now + drainTimeout
            var done = false
            while !done && ContinuousClock.now < deadline {
                let answer = await stack.http("POST", "ingest", "/learning/reading-events/batch", token: tokens[user], body: body, timeout: 20)
                switch answer?.status {
                case 200?:
                    let decoded = try? ContractCoding.decode(ReadingEventBatchResponse.self, from: Array(answer!.body))
                    figures.withLock { f in
                        f.batches += 1
                        if let decoded, decoded.rejected == 0 {
                            f.accepted += sent
                        } else {
                            f.violations.append("batch answered 200 with rejections: \(String(decoding: answer!.body, as: UTF8.self).prefix(300))")
                        }
                    }
                    done = true
                case 503?:
                    figures.withLock { f in
                        f.unavailable += 1
                        if answer?.retryAfter == nil { f.violations.append("503 without Retry-After") }
                    }
                    try? await Task.sleep(for: .milliseconds(300))
                case nil:
                    figures.withLock { $0.unanswered += 1 }
                    try? await Task.sleep(for: .milliseconds(300))
                case let status?:
                    figures.withLock { $0.violations.append("answered \(status): \(String(decoding: answer!.body, as: UTF8.self).prefix(300))") }
                    if status >= 500 { try? await Task.sleep(for: .milliseconds(300)) } else { done = true }
                }
            }
            if !done { figures.withLock { $0.violations.append("a batch was never accepted within \(drainTimeout)") } }
            user = (user + 1) % users
            try? await Task.sleep(for: pause)
        }
    }

    func stop() { stopping.store(true, ordering: .relaxed) }

    var snapshot: Figures { figures.withLock { $0 } }
}

/// A few room uploads as the app makes them: quota, upload-init, both files PUT to the
/// presigned URLs, upload-complete. Each step is resent after a 503 (which must carry
/// `Retry-After`) or a dropped connection until it is answered as it should be; any other
/// answer is a violation of the house rules.
final class RoomUploadDriver: Sendable {
    struct Room: Sendable, Hashable {
        let roomID: String
        let versionID: String
        let owner: String
    }

    struct Figures: Sendable {
        var started = 0
        /// Rooms whose upload-complete was answered 202.
        var accepted: [Room] = []
        var unavailable = 0
        var unanswered = 0
        var violations: [String] = []
    }

    /// The RoomPlan scans of `Tests/USDTests/Fixtures`: `{name}.usdz` with `{name}.roomplan.json`.
    static let scans = ["roomscan", "roomscan_usdc", "roomscan_open"]
    static let fixtures = Integration.packageRoot.appendingPathComponent("Tests/USDTests/Fixtures")

    let figures = Mutex(Figures())

    var snapshot: Figures { figures.withLock { $0 } }

    /// Uploads `count` rooms one after another, `pause` apart; each step is retried for up to `timeout`.
    func run(stack: FaultStack, count: Int, pause: Duration, timeout: Duration = .seconds(60)) async {
        for index in 0..<count {
            if index > 0 { try? await Task.sleep(for: pause) }
            let scan = Self.scans[index % Self.scans.count]
            let usdzPath = Self.fixtures.appendingPathComponent("\(scan).usdz").path
            let jsonPath = Self.fixtures.appendingPathComponent("\(scan).roomplan.json").path
            guard let usdz = FileManager.default.contents(atPath: usdzPath).map([UInt8].init),
                  let json = FileManager.default.contents(atPath: jsonPath).map([UInt8].init) else {
                figures.withLock { $0.violations.append("fixture \(scan) not readable") }
                return
            }
            let owner = "fault-room-owner-\(index)"
            let token = stack.codec.issue(userID: owner, ttl: 86_400)
            figures.withLock { $0.started += 1 }
            guard await call(stack, "GET", "/rooms/quota", token: token, expect: [200], timeout: timeout) != nil,
                  let initBody = try? ContractCoding.encode(RoomUploadInitRequest(
                      title: "fault room \(index)", tags: ["fault"], visibility: .public, usdzBytes: Int64(usdz.count),
                      roomplanJsonBytes: Int64(json.count))),
                  let created = await call(stack, "POST", "/rooms/uploads", token: token, body: Data(initBody), expect: [201],
                                           timeout: timeout),
                  let answer = try? ContractCoding.decode(RoomUploadInitResponse.self, from: Array(created.body)),
                  await put(answer.usdz, file: usdzPath, timeout: timeout),
                  await put(answer.roomplanJson, file: jsonPath, timeout: timeout) else { continue }
            let complete = RoomVersionCompleteRequest(
                roomId: answer.roomId, versionId: answer.versionId, title: "fault room \(index)", tags: ["fault"], visibility: .public,
                source: RoomSource(usdzKey: answer.usdz.key, usdzBytes: answer.usdz.bytes, roomplanJsonKey: answer.roomplanJson.key,
                                   roomplanJsonBytes: answer.roomplanJson.bytes, sha256: Digest.hex(Digest.sha256(usdz))),
                redactions: [])
            guard let completeBody = try? ContractCoding.encode(complete),
                  await call(stack, "POST", "/rooms/versions", token: token, body: Data(completeBody), expect: [202],
                             timeout: timeout) != nil else { continue }
            figures.withLock { $0.accepted.append(Room(roomID: answer.roomId, versionID: answer.versionId, owner: owner)) }
        }
    }

    /// Sends until answered with one of `expect`; nil (and a violation) otherwise.
    private func call(_ stack: FaultStack, _ method: String, _ path: String, token: String, body: Data? = nil,
                      expect: Set<Int>, timeout: Duration) async -> FaultStack.Response? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let answer = await stack.http(method, "ingest", path, token: token, body: body, timeout: 20)
            switch answer?.status {
            case let status? where expect.contains(status):
                return answer
            case 503?:
                figures.withLock { f in
                    f.unavailable += 1
                    if answer?.retryAfter == nil { f.violations.append("\(method) \(path): 503 without Retry-After") }
                }
                // As the app does: wait as asked (capped, so the load keeps its pace), then resend.
                let asked = Int(answer?.retryAfter ?? "") ?? 1
                try? await Task.sleep(for: .milliseconds(min(max(asked, 0), 2) * 500 + 200))
            case nil:
                figures.withLock { $0.unanswered += 1 }
                try? await Task.sleep(for: .milliseconds(300))
            case let status?:
                figures.withLock {
                    $0.violations.append("\(method) \(path) answered \(status): \(String(decoding: answer!.body, as: UTF8.self).prefix(300))")
                }
                return nil
            }
        }
        figures.withLock { $0.violations.append("\(method) \(path) not answered \(expect.sorted()) within \(timeout)") }
        return nil
    }

    /// PUT of `file` to a presigned single-part upload (the object store is not faulted, so one retry at most).
    private func put(_ upload: PresignedUpload, file: String, timeout: Duration) async -> Bool {
        guard let url = upload.url else {
            figures.withLock { $0.violations.append("\(upload.key): no single-part URL") }
            return false
        }
        var last = "no answer"
        for _ in 0..<3 {
            if let answer = try? await PlainHTTP.send("PUT", url, headers: upload.headers, file: file) {
                if answer.status == 200 { return true }
                last = "\(answer.status) \(answer.body.prefix(200))"
            }
            try? await Task.sleep(for: .milliseconds(300))
        }
        figures.withLock { $0.violations.append("PUT \(upload.key): \(last)") }
        return false
    }
}

/// The rooms as the app and the bucket see them, against the rooms whose upload-complete was answered 202.
struct RoomAudit: Sendable, CustomStringConvertible {
    var uploaded = 0
    var ready = 0
    var failed = 0
    /// Versions not (yet) ready, with what the catch-up query answered.
    var notReady: [String] = []
    /// Versions without `layer_manifest.json` in the bucket.
    var missingManifest: [String] = []
    /// Versions with more than one distinct `ready` on the status topic, or more than one job row.
    var doubled: [String] = []

    var isExact: Bool { ready == uploaded && failed == 0 && notReady.isEmpty && missingManifest.isEmpty && doubled.isEmpty }

    var description: String {
        "rooms uploaded \(uploaded), ready \(ready), failed \(failed), not ready \(notReady.prefix(3)), "
            + "manifest missing \(missingManifest.prefix(3)), ready more than once \(doubled.prefix(3))"
    }

    /// For every room: the catch-up `GET /rooms/versions/{id}` (with the owner's token) answers
    /// `ready` with its outputs, the manifest is in the bucket, one job row, and the status topic
    /// carries exactly one distinct `ready` for it.
    static func audit(_ rooms: [RoomUploadDriver.Room], stack: FaultStack) async throws -> RoomAudit {
        var audit = RoomAudit()
        audit.uploaded = rooms.count
        guard let s3 = stack.s3 else { return audit }
        let store = S3ObjectStore(configuration: s3)
        for room in rooms {
            let answer = await stack.http("GET", "transcode-worker", "/rooms/versions/\(room.versionID)",
                                          token: stack.codec.issue(userID: room.owner, ttl: 3600), timeout: 10)
            let details = answer.flatMap { $0.status == 200 ? try? ContractCoding.decode(RoomVersionDetails.self, from: Array($0.body)) : nil }
            switch details?.status {
            case .ready? where details?.outputs != nil: audit.ready += 1
            case .failed?: audit.failed += 1
            default: audit.notReady.append("\(room.versionID): \(answer.map { "\($0.status) \(String(decoding: $0.body, as: UTF8.self).prefix(200))" } ?? "no answer")")
            }
            if try await store.head("rooms/\(room.roomID)/\(room.versionID)/layer_manifest.json") == nil {
                audit.missingManifest.append(room.versionID)
            }
        }
        guard !rooms.isEmpty else { return audit }
        let ids = "{" + rooms.map(\.versionID).joined(separator: ",") + "}"
        for row in try await stack.client.query(
            "SELECT version_id, count(*)::bigint AS n FROM transcode_jobs WHERE version_id = ANY($1::text[]) GROUP BY version_id HAVING count(*) > 1",
            [ids]) {
            audit.doubled.append("\(try row.decode(String.self, "version_id")): job rows")
        }
        // Every status record up to the high watermarks; hostile ones do not decode and are skipped.
        let admin = try KafkaAdmin(bootstrapServers: stack.kafka.bootstrapServers, timeout: .seconds(5), logger: .disabled)
        let partitions = Topics.all.first { $0.name == Topics.roomTranscodeStatus }?.partitions ?? 1
        var total: Int64 = 0
        for partition in 0..<partitions { total += try await admin.watermarks(topic: Topics.roomTranscodeStatus, partition: partition).high }
        let records = try await TopicReader.read(Topics.roomTranscodeStatus, bootstrapServers: stack.kafka.bootstrapServers, count: Int(total))
        var readies: [String: Set<RoomTranscodeStatus>] = [:]
        for record in records {
            guard let status = try? ContractCoding.decode(RoomTranscodeStatus.self, from: record.value), status.status == .ready else { continue }
            readies[status.versionId, default: []].insert(status)
        }
        for room in rooms where (readies[room.versionID]?.count ?? 0) != 1 {
            // A worker killed between publishing a status and deleting its outbox row publishes
            // that row again — the same record; two different `ready`s would be two transcodes.
            audit.doubled.append("\(room.versionID): \(readies[room.versionID]?.count ?? 0) distinct ready on \(Topics.roomTranscodeStatus)")
        }
        return audit
    }
}
