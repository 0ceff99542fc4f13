import DevInfrastructure
import Foundation
import Kafka
import ServiceLogging
import Testing

extension KafkaIntegrationTests {
    @Suite("Kafka interoperability and admin")
    struct KafkaInteropTests {
        @Test("kcat reads what the wrapper wrote, and the wrapper reads what kcat wrote")
        func kcatRoundTrip() async throws {
            let (cluster, topic) = try clusterWithTopic("interop", partitions: 1)
            defer { cluster.shutdown() }

            try await produceAll((0..<5).map { KafkaProducerRecord(topic: topic, key: bytes("k\($0)"), value: bytes("from-swift-\($0)")) }, to: cluster)
            let read = try runKcat(["-b", cluster.bootstrapServers, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k %s\n"])
            #expect(read.split(separator: "\n").map(String.init) == (0..<5).map { "k\($0) from-swift-\($0)" })

            _ = try runKcat(["-b", cluster.bootstrapServers, "-P", "-t", topic, "-K", ":"], input: "x1:from-kcat-1\nx2:from-kcat-2\n")
            // Read from offset 5 by direct assignment: no group to form (the mock takes 3 s for that).
            var configuration = KafkaConsumerConfiguration(bootstrapServers: cluster.bootstrapServers, groupID: uniqueName("g"), topics: [])
            configuration.assignment = [KafkaTopicPartition(topic: topic, partition: 0): 5]
            let consumer = try KafkaConsumer(configuration: configuration, rebalanceListener: nil, logger: testLogger)
            let records = try await consume(consumer, count: 2)
            await consumer.close()
            #expect(records.map { "\(text($0.key))=\(text($0.value))" } == ["x1=from-kcat-1", "x2=from-kcat-2"])
            #expect(records.allSatisfy { $0.timestamp != nil })
        }

        @Test("admin lists topics (a created one with its partitions) and reads watermarks")
        func admin() async throws {
            let (cluster, topic) = try clusterWithTopic("admin", partitions: 3)
            defer { cluster.shutdown() }
            let producer = try testProducer(cluster)
            let before = Date()
            _ = await producer.send((0..<30).map { KafkaProducerRecord(topic: topic, partition: Int32($0 % 3), value: bytes("v\($0)")) })
            await producer.shutdown()

            let admin = try KafkaAdmin(bootstrapServers: cluster.bootstrapServers, logger: testLogger)
            let topics = try await admin.listTopics()
            #expect(topics.first { $0.name == topic }?.partitions == [0, 1, 2])
            let marks = try await admin.watermarks(topic: topic, partition: 1)
            #expect(marks.low == 0 && marks.high == 10)

            let created = uniqueName("created")
            try cluster.createTopic(created, partitions: 2)
            #expect(try await admin.listTopics().first { $0.name == created }?.partitions == [0, 1])

            // The mock has no time index: it answers -1 ("none yet") for every timestamp.
            let offsets = try await admin.offsets(forTime: before, topic: topic)
            #expect(offsets.keys.sorted() == [0, 1, 2])
            await #expect(throws: KafkaError.self) { _ = try await admin.offsets(forTime: before, topic: uniqueName("missing")) }
        }

        @Test("the embedded cluster auto-creates a topic with 4 partitions on first use, and its brokers come back up")
        func autoCreateAndBrokerRestart() async throws {
            let cluster = try EmbeddedKafkaCluster(brokers: 1)
            defer { cluster.shutdown() }
            let topic = uniqueName("auto")
            let producer = try KafkaProducer(configuration: .init(bootstrapServers: cluster.bootstrapServers, deliveryTimeout: .seconds(10)),
                                             logger: testLogger)
            _ = try await producer.send(KafkaProducerRecord(topic: topic, value: bytes("first")))
            let admin = try KafkaAdmin(bootstrapServers: cluster.bootstrapServers, logger: testLogger)
            #expect(try await admin.listTopics().first { $0.name == topic }?.partitions == [0, 1, 2, 3])

            try cluster.setBrokerDown(1)
            try await Task.sleep(for: .milliseconds(300))
            try cluster.setBrokerUp(1)
            let report = try await producer.send(KafkaProducerRecord(topic: topic, partition: 0, value: bytes("after restart")))
            #expect(report.partition == 0)
            await producer.shutdown()
        }
    }
}
