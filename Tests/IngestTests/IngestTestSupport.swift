import Auth
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import HTTPServer
import Ingest
import JSON
import Kafka
import ObjectStore
import Postgres
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime
import Synchronization
import Testing

let testSecret = "ingest-tests-secret-0123456789"
let testLogger = Logger(label: "ingest-tests", level: .critical)

/// One ingest over a fresh database and an embedded Kafka cluster; requests go straight
/// to its router (or over loopback HTTP with `startHTTP`).
final class IngestHarness: Sendable {
    let cluster: EmbeddedKafkaCluster
    let database: TestDatabase
    let context: ServiceContext
    let router: Router
    let parts: ServiceParts
    let codec: JWTCodec
    let configuration: IngestConfiguration
    private let server = Mutex<Task<Void, Never>?>(nil)

    /// `secret` and `tokens`: what the service checks tokens with (`JWT_SECRET`, `JWT_JWKS_*`,
    /// `JWT_ISSUER`, `JWT_AUDIENCE`).
    init(configuration: IngestConfiguration = IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000),
         deliveryTimeout: Duration = .seconds(3), objects: (any ObjectStore)? = nil, secret: String = testSecret,
         tokens: TokenVerificationSettings = TokenVerificationSettings()) async throws {
        codec = JWTCodec(secret: secret)
        cluster = try EmbeddedKafkaCluster(brokers: 1)
        try cluster.createTopic(configuration.readingEventsTopic, partitions: 3)
        try cluster.createTopic(configuration.roomTranscodeTopic, partitions: 3)
        try cluster.createTopic(configuration.roomStatusTopic, partitions: 3)
        try cluster.createTopic(configuration.roomUploadsTopic, partitions: 3)
        database = try await TestDatabase.create("ingest_test")
        var common = CommonConfiguration(kafkaBrokers: cluster.bootstrapServers, databaseURL: database.url,
                                         jwtSecret: secret, httpHost: "127.0.0.1", httpPort: 0, databasePoolSize: 4, kafkaFetchWait: EmbeddedKafkaCluster.fetchWait)
        common.tokenVerification = tokens
        let client = PostgresClient(configuration: PostgresConfiguration(url: database.url, maxConnections: 4), logger: testLogger)
        _ = try await PostgresMigrator(migrations: IngestService.migrations, logger: testLogger).migrate(client)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers, clientID: "ingest-test",
                                                      deliveryTimeout: deliveryTimeout),
            logger: testLogger)
        let admin = try KafkaAdmin(bootstrapServers: cluster.bootstrapServers, timeout: .seconds(3), logger: testLogger)
        context = ServiceContext(name: "ingest", configuration: common, database: client, producer: producer, admin: admin,
                                 metrics: MetricsRegistry(), logger: testLogger)
        self.configuration = configuration
        parts = IngestService(context: context, configuration: configuration, objects: objects).parts()
        router = parts.router
    }

    /// A harness for `body`, closed whether `body` returns or throws.
    static func with(configuration: IngestConfiguration = IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000),
                     objects: (any ObjectStore)? = nil, secret: String = testSecret,
                     tokens: TokenVerificationSettings = TokenVerificationSettings(),
                     _ body: (IngestHarness) async throws -> Void) async throws {
        try await withResource(try await IngestHarness(configuration: configuration, objects: objects, secret: secret, tokens: tokens),
                               release: { await $0.close() }, body)
    }

    func close() async {
        let task = server.withLock { $0 }
        task?.cancel()
        await task?.value
        await context.producer.shutdown()
        await context.database.close()
        cluster.shutdown()
        await database.drop()
    }

    /// Serves the ingest routes on loopback; returns the port.
    func startHTTP(port: Int = 0) async throws -> Int {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let service = HTTPService(name: "ingest", configuration: HTTPServerConfiguration(host: "127.0.0.1", port: port),
                                  router: router, readiness: context.readinessChecks, metrics: context.metrics,
                                  logger: testLogger) { continuation.yield($0) }
        server.withLock { $0 = Task { try? await service.run(); continuation.finish() } }
        for await port in ports { return port }
        throw HTTPError.internalError
    }

    func userToken(_ user: String) -> String { codec.issue(userID: user) }
    var serviceToken: String { codec.issue(userID: "catalog-service", role: "service") }

    func request(_ method: HTTPMethod, _ path: String, token: String?, body: [UInt8],
                 headers extra: [(String, String)] = []) async -> HTTPResponse {
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in extra { headers.add(name: name, value: value) }
        return await router.respond(to: HTTPRequest(method: method, path: path, headers: headers, body: body))
    }

    func request(_ method: HTTPMethod, _ path: String, token: String?, json: JSONValue) async throws -> HTTPResponse {
        await request(method, path, token: token, body: Array(try ContractCoding.encoder.encode(json)))
    }

    func putMaterial(_ id: String, _ body: MaterialUpsertRequest) async throws -> HTTPResponse {
        await request(.put, "/materials/\(id)", token: serviceToken, body: try ContractCoding.encode(body))
    }

    func postBatch(user: String, events: [JSONValue]) async throws -> HTTPResponse {
        try await request(.post, "/learning/reading-events/batch", token: userToken(user), json: .object(["events": .array(events)]))
    }

    /// Reads every record of `topic` with kcat, an independent Kafka client: (key, value).
    func readTopic(_ topic: String, expecting count: Int) throws -> [(key: String, value: String)] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/kcat")
        process.arguments = ["-b", cluster.bootstrapServers, "-C", "-t", topic, "-o", "beginning", "-c", String(count),
                             "-e", "-q", "-f", "%k\\t%s\\n"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map { line in
            let parts = line.split(separator: "\t", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        }
    }
}

extension HTTPResponse {
    var json: JSONValue? { try? ContractCoding.decoder.decode(JSONValue.self, from: Data(body)) }
    var errorCode: String? { json?["error"]?["code"]?.stringValue }
    func decoded<T: Decodable>(_ type: T.Type) throws -> T { try ContractCoding.decoder.decode(T.self, from: Data(body)) }
}

/// A valid event as the app sends it, with overrides.
func sampleEvent(id: String = UUID().uuidString, material: String = "lesson-shared", type: String = "heartbeat",
                 target: String = "knowledgeSource", timestamp: JSONValue? = nil,
                 _ overrides: [String: JSONValue] = [:]) -> JSONValue {
    var object: [String: JSONValue] = [
        "eventId": .string(id), "clientSessionId": .string("7A0E1C3D-2B4F-4E8A-9C61-1F2E3D4C5B6A"),
        "readingTargetType": .string(target), "materialId": .string(material), "knowledgeBaseId": .string("kb-physics-101"),
        "eventType": .string(type), "position": .object(["page": .number(3), "totalPages": .number(12)]),
        "activeSecondsDelta": .number(15),
        "clientTimestamp": timestamp ?? .string(ContractCoding.formatTimestamp(Date().addingTimeInterval(-60))),
        "clientTimezoneOffsetMinutes": .number(480), "sequence": .number(1), "platform": .string("iOS"),
        "appVersion": .string("2.3.0"),
    ]
    for (key, value) in overrides { object[key] = value }
    return .object(object)
}
