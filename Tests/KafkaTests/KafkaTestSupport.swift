import DevInfrastructure
import Foundation
import Kafka
import ServiceLogging
import Synchronization
import Testing

let integrationEnabled = ProcessInfo.processInfo.environment["BACKBONE_INTEGRATION"] == "1"

let testLogger = Logger(label: "kafka-tests", level: .error)

func bytes(_ string: String) -> [UInt8] { Array(string.utf8) }
func text(_ bytes: [UInt8]?) -> String { bytes.map { String(decoding: $0, as: UTF8.self) } ?? "" }

func uniqueName(_ prefix: String) -> String { "\(prefix)-\(UInt32.random(in: 0...UInt32.max))" }

/// A fresh embedded cluster with one new topic named after `prefix`; the caller shuts the
/// cluster down.
func clusterWithTopic(_ prefix: String, partitions: Int32, brokers: Int = 1) throws -> (EmbeddedKafkaCluster, String) {
    let cluster = try EmbeddedKafkaCluster(brokers: brokers)
    let topic = uniqueName(prefix)
    try cluster.createTopic(topic, partitions: partitions)
    return (cluster, topic)
}

/// A producer to `cluster` with the wrapper's defaults.
func testProducer(_ cluster: EmbeddedKafkaCluster) throws -> KafkaProducer {
    try KafkaProducer(configuration: .init(bootstrapServers: cluster.bootstrapServers), logger: testLogger)
}

/// Sends `records` through a producer of their own, shut down once every one is answered.
@discardableResult
func produceAll(_ records: [KafkaProducerRecord], to cluster: EmbeddedKafkaCluster) async throws -> [Result<KafkaDeliveryReport, KafkaError>] {
    let producer = try testProducer(cluster)
    let results = await producer.send(records)
    await producer.shutdown()
    return results
}

/// Polls `condition` every 50 ms until it holds or `timeout` elapsed.
func eventually(timeout: Duration = .seconds(30), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return await condition()
}

/// Consumes with `nextBatch` until `count` records arrived or `timeout` elapsed.
func consume(_ consumer: KafkaConsumer, count: Int, timeout: Duration = .seconds(30)) async throws -> [KafkaConsumerRecord] {
    var records: [KafkaConsumerRecord] = []
    let deadline = ContinuousClock.now + timeout
    while records.count < count && ContinuousClock.now < deadline {
        records += try await consumer.nextBatch(maxRecords: 500, maxWait: .milliseconds(200))
    }
    return records
}

/// A listener that starts partitions at fixed offsets and records what it was told.
final class FixedStartListener: KafkaRebalanceListener {
    let starts: [KafkaTopicPartition: Int64]
    let events = Mutex<[String]>([])

    init(starts: [KafkaTopicPartition: Int64] = [:]) { self.starts = starts }

    func partitionsAssigned(_ partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64] {
        events.withLock { $0.append("assigned \(partitions.count)") }
        return starts.filter { partitions.contains($0.key) }
    }

    func partitionsRevoked(_ partitions: [KafkaTopicPartition]) async {
        events.withLock { $0.append("revoked \(partitions.count)") }
    }
}

func runKcat(_ arguments: [String], input: String? = nil) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/kcat")
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    let inputPipe = Pipe()
    if input != nil { process.standardInput = inputPipe }
    try process.run()
    if let input {
        inputPipe.fileHandleForWriting.write(Data(input.utf8))
        try inputPipe.fileHandleForWriting.close()
    }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

/// Every test that starts an embedded cluster runs inside this suite, one at a time.
@Suite("Kafka integration (embedded mock cluster)", .serialized, .enabled(if: integrationEnabled), .timeLimit(.minutes(2)))
struct KafkaIntegrationTests {}
