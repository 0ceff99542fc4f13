import Auth
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JSON
import Kafka
import Postgres
import PrometheusMetrics
import RealtimeNotifier
import ServiceLogging
import ServiceRuntime
import Synchronization
import Testing

/// A fresh database, an embedded Kafka cluster with every topic, and N notifier instances
/// on ephemeral ports, all in this process.
final class RealtimeHarness: Sendable {
    static let secret = "realtime-test-secret-0123456789"
    /// The secret the instances check HS256 tokens with, and `codec` signs with.
    let secret: String
    /// What the instances check ES256/RS256 tokens with, and the sessions' issuer and audience.
    let tokens: TokenVerificationSettings
    let codec: JWTCodec
    let cluster: EmbeddedKafkaCluster
    let testDatabase: TestDatabase
    var databaseURL: String { testDatabase.url }
    let database: PostgresClient
    let producer: KafkaProducer
    private let instances = Mutex<[(task: Task<Void, any Error>, port: Int, service: RealtimeNotifierService, context: ServiceContext)]>([])
    let logger: Logger

    init(instances count: Int = 1, secret: String = RealtimeHarness.secret, tokens: TokenVerificationSettings = TokenVerificationSettings(),
         configure: (inout RealtimeConfiguration) -> Void = { _ in }) async throws {
        self.secret = secret
        self.tokens = tokens
        codec = JWTCodec(secret: secret)
        logger = ProcessInfo.processInfo.environment["REALTIME_TEST_LOG"] == "1" ? Logger(label: "realtime-test", level: .debug) : .disabled
        cluster = try EmbeddedKafkaCluster(brokers: 1, logger: .disabled)
        for topic in Topics.all { try cluster.createTopic(topic.name, partitions: topic.partitions) }
        testDatabase = try await TestDatabase.create("rt")
        database = PostgresClient(configuration: PostgresConfiguration(url: testDatabase.url, maxConnections: 4), logger: .disabled)
        _ = try await PostgresMigrator(migrations: RealtimeNotifierService.migrations, logger: .disabled).migrate(database)
        producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers,
                                                                               clientID: "realtime-test"), logger: .disabled)
        for index in 0..<count { try await startInstance(index, configure: configure) }
    }

    /// A harness for `body`, shut down whether `body` returns or throws.
    static func with(instances count: Int = 1, secret: String = RealtimeHarness.secret,
                     tokens: TokenVerificationSettings = TokenVerificationSettings(),
                     configure: (inout RealtimeConfiguration) -> Void = { _ in },
                     _ body: (RealtimeHarness) async throws -> Void) async throws {
        try await withResource(try await RealtimeHarness(instances: count, secret: secret, tokens: tokens, configure: configure),
                               release: { await $0.shutdown() }, body)
    }

    func startInstance(_ index: Int, configure: (inout RealtimeConfiguration) -> Void) async throws {
        var common = CommonConfiguration(kafkaBrokers: cluster.bootstrapServers, databaseURL: databaseURL, jwtSecret: secret,
                                         httpHost: "127.0.0.1", httpPort: 0, databasePoolSize: 6, kafkaFetchWait: EmbeddedKafkaCluster.fetchWait)
        common.tokenVerification = tokens
        let context = try await ServiceHost.makeContext(name: "realtime-notifier-\(index)", configuration: common,
                                                        metrics: MetricsRegistry(), logger: logger)
        var configuration = RealtimeConfiguration(maxBatchWait: .milliseconds(5), fetchWait: .milliseconds(5), maintenanceInterval: .seconds(1),
                                                  instanceID: "test-\(index)-\(UUID().uuidString.prefix(8))")
        configure(&configuration)
        var service = RealtimeNotifierService(context: context, configuration: configuration)
        let port = Mutex<Int?>(nil)
        service.onListening = { bound in port.withLock { $0 = bound } }
        let parts = service.parts()
        let task = Task { try await ServiceHost.run(context: context, parts: parts, handlesSignals: false) }
        let deadline = ContinuousClock.now + .seconds(10)
        while port.withLock({ $0 }) == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        guard let bound = port.withLock({ $0 }) else { throw PythonClient.Failure(description: "instance \(index) did not listen") }
        instances.withLock { $0.append((task, bound, service, context)) }
        // Its consumer of sequenced events joins its group in the background; wait for it.
        let liveDeadline = ContinuousClock.now + .seconds(60)
        while !service.hub.isLive {
            guard ContinuousClock.now < liveDeadline else { throw PythonClient.Failure(description: "instance \(index) never went live") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func port(_ index: Int = 0) -> Int { instances.withLock { $0[index].port } }
    func hub(_ index: Int = 0) -> SubscriptionHub { instances.withLock { $0[index].service.hub } }

    func socketURL(_ index: Int = 0, user: String, vsn: String = "1.0.0") -> String {
        "ws://127.0.0.1:\(port(index))/realtime/v1/websocket?apikey=\(token(user))&vsn=\(vsn)"
    }

    func token(_ user: String) -> String { codec.issue(userID: user, ttl: 3600) }

    /// The project's anon key, as a Supabase project's legacy keys are made: HS256 with the
    /// project's JWT secret, `role: anon`, no user.
    func anonKey() -> String { codec.anonKey }

    /// A socket opened the way Supabase's SDKs open it: the anon key as `apikey`.
    func anonSocketURL(_ index: Int = 0, vsn: String = "1.0.0") -> String {
        "ws://127.0.0.1:\(port(index))/realtime/v1/websocket?apikey=\(anonKey())&vsn=\(vsn)"
    }

    /// Waits until instance `index` has `count` subscriptions.
    func waitForSubscriptions(_ count: Int, instance index: Int = 0, timeout: Duration = .seconds(45)) async throws {
        let deadline = ContinuousClock.now + timeout
        while hub(index).subscriptionCount < count {
            guard ContinuousClock.now < deadline else {
                throw PythonClient.Failure(description: "only \(hub(index).subscriptionCount) of \(count) subscriptions")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func broadcast(_ channel: String, _ event: String, _ payload: [String: JSONValue]) async throws {
        let value = RealtimeBroadcast(channel: channel, event: event, payload: .object(payload))
        _ = try await producer.send(KafkaProducerRecord(topic: Topics.realtimeBroadcasts, key: Array(channel.utf8),
                                                        value: try ContractCoding.encode(value)))
    }

    /// An upload-complete's transcode request for `roomID` (what the notifier learns rooms from first).
    func transcodeRequest(roomID: String, owner: String, visibility: RoomVisibility) async throws {
        let complete = RoomVersionCompleteRequest(
            roomId: roomID, versionId: "v-\(roomID)", title: "t", tags: [], visibility: visibility,
            source: RoomSource(usdzKey: "rooms/\(roomID)/v/source.usdz", usdzBytes: 1, roomplanJsonKey: "rooms/\(roomID)/v/roomplan.json",
                               roomplanJsonBytes: 1), redactions: [])
        _ = try await producer.send(KafkaProducerRecord(topic: Topics.roomTranscodeRequests, key: Array(roomID.utf8),
                                                        value: try ContractCoding.encode(RoomTranscodeRequest(
                                                            ownerUserId: owner, request: complete, requestedAt: Date()))))
    }

    /// What ingest announces when upload-init answered (`room.uploads.v1`).
    func uploadStarted(roomID: String, owner: String, visibility: RoomVisibility) async throws {
        let event = RoomUploadEvent(roomId: roomID, versionId: "v-\(roomID)", ownerUserId: owner, status: .uploading, title: "t",
                                    tags: [], visibility: visibility, expiresAt: Date().addingTimeInterval(86_400), at: Date())
        _ = try await producer.send(KafkaProducerRecord(topic: Topics.roomUploads, key: Array(roomID.utf8),
                                                        value: try ContractCoding.encode(event)))
    }

    func transcodeStatus(_ status: RoomTranscodeStatus) async throws {
        _ = try await producer.send(KafkaProducerRecord(topic: Topics.roomTranscodeStatus, key: Array(status.roomId.utf8),
                                                        value: try ContractCoding.encode(status)))
    }

    /// Waits until channel `channel` has sequenced `seq` events.
    func waitForSequence(_ channel: String, atLeast seq: Int64, timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            let last = try await database.query("SELECT last_seq FROM realtime_channels WHERE channel = $1", [channel]).first?
                .decode(Int64.self, "last_seq") ?? 0
            if last >= seq { return }
            guard ContinuousClock.now < deadline else { throw PythonClient.Failure(description: "\(channel) only at seq \(last)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// `GET` (or `method` with `body`) on instance `index`, returning status and body.
    func get(_ path: String, token: String?, instance index: Int = 0, method: String = "GET", body: Data? = nil) async throws -> (Int, Data) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port(index))\(path)")!)
        request.httpMethod = method
        request.httpBody = body
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        return try await withCheckedThrowingContinuation { continuation in
            URLSession.shared.dataTask(with: request) { data, response, error in
                if let error { continuation.resume(throwing: error); return }
                continuation.resume(returning: ((response as? HTTPURLResponse)?.statusCode ?? 0, data ?? Data()))
            }.resume()
        }
    }

    func shutdown() async {
        let all = instances.withLock { $0 }
        for instance in all.reversed() {
            instance.task.cancel()
            _ = await instance.task.result
            await instance.context.producer.shutdown()
            await instance.context.database.close()
        }
        await producer.shutdown()
        await database.close()
        await testDatabase.drop()
        cluster.shutdown()
    }
}
