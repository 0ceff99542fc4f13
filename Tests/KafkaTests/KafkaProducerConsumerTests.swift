import DevInfrastructure
import Foundation
@testable import Kafka
import ServiceLogging
import Testing

extension KafkaIntegrationTests {
    @Suite("Kafka producer and consumer against the embedded cluster")
    struct KafkaProducerConsumerTests {
        @Test("10,000 records produced are all consumed back through a group, in order per key")
        func roundTrip() async throws {
            let (cluster, topic) = try clusterWithTopic("round-trip", partitions: 4)
            defer { cluster.shutdown() }
            let producer = try testProducer(cluster)
            let records = (0..<10_000).map { index in
                KafkaProducerRecord(topic: topic, key: bytes("key-\(index % 37)"), value: bytes("\(index % 37):\(index)"),
                                    headers: [KafkaHeader(key: "n", value: bytes(String(index)))])
            }
            let results = await producer.send(records)
            #expect(results.allSatisfy { (try? $0.get()) != nil })
            await producer.shutdown()

            let consumer = try KafkaConsumer(
                configuration: .init(bootstrapServers: cluster.bootstrapServers, groupID: uniqueName("g"), topics: [topic],
                                     bufferCapacity: 1_000),
                rebalanceListener: FixedStartListener(), logger: testLogger)
            let consumed = try await consume(consumer, count: 10_000)
            await consumer.close()

            #expect(consumed.count == 10_000)
            var lastByKey: [String: Int] = [:]
            var outOfOrder = 0
            for record in consumed {
                let parts = text(record.value).split(separator: ":")
                let (key, sequence) = (String(parts[0]), Int(parts[1])!)
                if let last = lastByKey[key], last >= sequence { outOfOrder += 1 }
                lastByKey[key] = sequence
                #expect(text(record.headers.first?.value) == String(sequence))
            }
            #expect(outOfOrder == 0)
            #expect(Set(consumed.map { text($0.value) }).count == 10_000)
        }

        @Test("a start offset supplied at assignment is where consumption begins")
        func startOffsetHonoured() async throws {
            let (cluster, topic) = try clusterWithTopic("start-offset", partitions: 1)
            defer { cluster.shutdown() }
            try await produceAll((0..<1_000).map { KafkaProducerRecord(topic: topic, value: bytes("v\($0)")) }, to: cluster)

            let partition = KafkaTopicPartition(topic: topic, partition: 0)
            let consumer = try KafkaConsumer(
                configuration: .init(bootstrapServers: cluster.bootstrapServers, groupID: uniqueName("g"), topics: [topic]),
                rebalanceListener: FixedStartListener(starts: [partition: 500]), logger: testLogger)
            var iterator = consumer.records.makeAsyncIterator()
            let first = try await iterator.next()
            #expect(first?.offset == 500)
            #expect(text(first?.value) == "v500")
            #expect(consumer.assignment() == [partition])
            var rest: [Int64] = []
            for try await record in consumer.records {
                rest.append(record.offset)
                if record.offset == 999 { break }
            }
            #expect(rest == Array(501..<1_000))
            #expect(await eventually(timeout: .seconds(5)) { consumer.lag()[partition] == 0 })
            await consumer.close()
            #expect(consumer.assignment().isEmpty)
        }

        @Test("an unread consumer buffers about its capacity, then delivers everything without gaps")
        func boundedBuffer() async throws {
            let (cluster, topic) = try clusterWithTopic("bounded", partitions: 2)
            defer { cluster.shutdown() }
            try await produceAll((0..<6_000).map { KafkaProducerRecord(topic: topic, partition: Int32($0 % 2), value: bytes("v\($0)")) }, to: cluster)

            // The buffer is the same with a group; direct assignment spares the mock's 3 s to form one.
            var configuration = KafkaConsumerConfiguration(bootstrapServers: cluster.bootstrapServers, groupID: uniqueName("g"), topics: [],
                                                           bufferCapacity: 500)
            configuration.assignment = [KafkaTopicPartition(topic: topic, partition: 0): -1, KafkaTopicPartition(topic: topic, partition: 1): -1]
            let consumer = try KafkaConsumer(configuration: configuration, rebalanceListener: nil, logger: testLogger)
            #expect(await eventually { consumer.bufferedCount >= 500 })
            try await Task.sleep(for: .seconds(1))
            #expect(consumer.bufferedCount <= 500 + 512)
            let records = try await consume(consumer, count: 6_000)
            await consumer.close()
            for partition in Int32(0)...1 {
                #expect(records.filter { $0.partition == partition }.map(\.offset) == Array(0..<3_000))
            }
        }

        @Test("a slow consumer of a large backlog receives every record through many pause/resume cycles")
        func backlogThroughPauses() async throws {
            let (cluster, topic) = try clusterWithTopic("backlog", partitions: 6)
            defer { cluster.shutdown() }
            let producer = try testProducer(cluster)
            // The mock broker keeps the last 5 MB of each partition: stay well inside it.
            let payload = String(repeating: "x", count: 300)
            let total = 40_000
            for result in await producer.send((0..<total).map {
                KafkaProducerRecord(topic: topic, key: bytes("user-\($0 % 97)"), value: bytes("\($0) \(payload)"))
            }) { _ = try result.get() }
            await producer.shutdown()

            var configuration = KafkaConsumerConfiguration(bootstrapServers: cluster.bootstrapServers, groupID: uniqueName("g"), topics: [],
                                                           bufferCapacity: 4_000)
            configuration.assignment = Dictionary(uniqueKeysWithValues: (Int32(0)..<6).map { (KafkaTopicPartition(topic: topic, partition: $0), Int64(-1)) })
            let consumer = try KafkaConsumer(configuration: configuration, rebalanceListener: nil, logger: testLogger)
            var seen: [Int32: [Int64]] = [:]
            var count = 0
            let deadline = ContinuousClock.now + .seconds(60)
            while count < total && ContinuousClock.now < deadline {
                let batch = try await consumer.nextBatch(maxRecords: 2_000, maxWait: .milliseconds(20))
                for record in batch { seen[record.partition, default: []].append(record.offset) }
                count += batch.count
                if !batch.isEmpty { try await Task.sleep(for: .milliseconds(30)) }
            }
            await consumer.close()
            #expect(count == total)
            for (partition, offsets) in seen.sorted(by: { $0.key < $1.key }) {
                #expect(offsets.first == 0 && offsets == Array(0..<Int64(offsets.count)),
                        "partition \(partition): \(offsets.count) records from \(offsets.first ?? -1) to \(offsets.last ?? -1), no gaps or repeats")
            }
        }

        @Test("a queue too small for the batch is backpressure, not an error")
        func queueFullIsBackpressure() async throws {
            let (cluster, topic) = try clusterWithTopic("queue-full", partitions: 2)
            defer { cluster.shutdown() }
            let producer = try KafkaProducer(
                configuration: .init(bootstrapServers: cluster.bootstrapServers, extra: ["queue.buffering.max.messages": "10"]),
                logger: testLogger)
            let results = await producer.send((0..<3_000).map { KafkaProducerRecord(topic: topic, value: bytes("v\($0)")) })
            let failures = results.compactMap { result -> KafkaError? in
                if case .failure(let error) = result { return error }
                return nil
            }
            #expect(failures.isEmpty, "\(failures.first.map(String.init(describing:)) ?? "")")
            #expect(producer.backpressureWaits > 0)  // the queue really was full
            #expect(results.compactMap { try? $0.get().offset }.count == 3_000)
            let single = try await producer.send(KafkaProducerRecord(topic: topic, partition: 1, value: bytes("last")))
            #expect(single.partition == 1)
            await producer.shutdown()
        }

        @Test("with every broker down, send fails within the delivery timeout instead of hanging")
        func brokersDownFailFast() async throws {
            let (cluster, topic) = try clusterWithTopic("down", partitions: 1, brokers: 2)
            defer { cluster.shutdown() }
            try cluster.setAllBrokersDown()
            let producer = try KafkaProducer(
                configuration: .init(bootstrapServers: cluster.bootstrapServers, deliveryTimeout: .seconds(3)), logger: testLogger)
            let started = ContinuousClock.now
            do {
                _ = try await producer.send(KafkaProducerRecord(topic: topic, value: bytes("lost")))
                Issue.record("send succeeded with every broker down")
            } catch {
                #expect(error.code == .messageTimedOut)
                #expect(error.isRetriable)
            }
            #expect(ContinuousClock.now - started < .seconds(8))
            await producer.shutdown()
            await producer.shutdown()
            await producer.flush(timeout: .seconds(1))
            do {
                _ = try await producer.send(KafkaProducerRecord(topic: topic, value: bytes("after shutdown")))
                Issue.record("send succeeded after shutdown")
            } catch {
                #expect(error.code == .shutdown)
            }
        }
    }
}
