import DevInfrastructure
import Foundation
@testable import Kafka
import ServiceLogging
import Testing

extension KafkaIntegrationTests {
    @Suite("Kafka consumer seek and direct assignment")
    struct KafkaSeekTests {
        @Test("seek moves an assigned partition back: what was buffered is dropped and records come again from the new offset")
        func seekBack() async throws {
            let (cluster, topic) = try clusterWithTopic("seek", partitions: 1)
            defer { cluster.shutdown() }
            try await produceAll((0..<300).map { KafkaProducerRecord(topic: topic, value: bytes("v\($0)")) }, to: cluster)

            let partition = KafkaTopicPartition(topic: topic, partition: 0)
            let consumer = try KafkaConsumer(
                configuration: .init(bootstrapServers: cluster.bootstrapServers, groupID: uniqueName("g"), topics: [topic]),
                rebalanceListener: FixedStartListener(), logger: testLogger)
            var first: [Int64] = []
            while first.count < 100 { first += try await consumer.nextBatch(maxRecords: 100 - first.count, maxWait: .seconds(1)).map(\.offset) }
            #expect(first == Array(0..<100))
            // Let the consumer buffer ahead, then move back.
            #expect(await eventually(timeout: .seconds(5)) { consumer.bufferedCount > 0 })
            try await consumer.seek([partition: 20])
            let next = try await consumer.nextBatch(maxRecords: 10, maxWait: .seconds(5))
            #expect(next.first?.offset == 20, "records come again from the new offset, not from the buffer: \(next.map(\.offset))")
            #expect(next.map(\.offset) == Array(20..<Int64(20 + next.count)))
            await consumer.close()
        }

        @Test("a consumer given its partitions reads them from the given offsets without joining a group")
        func directAssignment() async throws {
            let (cluster, topic) = try clusterWithTopic("assign", partitions: 2)
            defer { cluster.shutdown() }
            try await produceAll((0..<40).map { KafkaProducerRecord(topic: topic, key: bytes("k\($0 % 2)"), value: bytes("v\($0)")) }, to: cluster)
            let admin = try KafkaAdmin(bootstrapServers: cluster.bootstrapServers, logger: testLogger)
            // The partition the keys put most records in (both keys may hash to the same one).
            let id: Int32 = try await admin.watermarks(topic: topic, partition: 0).high >= 20 ? 0 : 1
            let p0 = KafkaTopicPartition(topic: topic, partition: id)
            let high = try await admin.watermarks(topic: topic, partition: id).high
            var configuration = KafkaConsumerConfiguration(bootstrapServers: cluster.bootstrapServers, groupID: uniqueName("g"), topics: [])
            configuration.assignment = [p0: 5]
            let started = ContinuousClock.now
            let consumer = try KafkaConsumer(configuration: configuration, rebalanceListener: nil, logger: testLogger)
            var offsets: [Int64] = []
            while offsets.count < Int(high - 5) {
                offsets += try await consumer.nextBatch(maxRecords: 100, maxWait: .seconds(1)).map(\.offset)
                if ContinuousClock.now - started > .seconds(10) { break }
            }
            #expect(offsets == Array(5..<high))
            #expect(ContinuousClock.now - started < .seconds(2), "no group to join, so no rebalance delay")
            #expect(consumer.assignment() == [p0])
            await consumer.close()
        }
    }
}
