import DevInfrastructure
import Foundation
import Kafka
import ServiceLogging
import Synchronization
import Testing

/// Plays the projection runner: offsets live in an in-memory "database" (`committed`), a batch
/// and its offsets are committed together, and a revoke waits for the in-flight batch.
final class OffsetStore: Sendable {
    struct State {
        var committed: [KafkaTopicPartition: Int64] = [:]
        var processedBy: [String: Int] = [:]
        var total = 0
        /// Records whose offset was not the partition's next uncommitted one (re-processing or a gap).
        var violations: [String] = []
    }

    let state = Mutex(State())

    func startOffsets(_ partitions: [KafkaTopicPartition]) -> [KafkaTopicPartition: Int64] {
        state.withLock { state in state.committed.filter { partitions.contains($0.key) } }
    }

    /// Applies a batch and its offsets "in one transaction".
    func commit(_ records: [KafkaConsumerRecord], member: String) {
        state.withLock { state in
            for record in records {
                let expected = state.committed[record.topicPartition] ?? 0
                if record.offset != expected {
                    state.violations.append("\(member) got \(record.topicPartition)@\(record.offset), expected \(expected)")
                }
                state.committed[record.topicPartition] = record.offset + 1
                state.processedBy[member, default: 0] += 1
                state.total += 1
            }
        }
    }

    var total: Int { state.withLock { $0.total } }
}

/// One group member: a consume loop plus the listener that guards its in-flight batch.
final class GroupMember: KafkaRebalanceListener {
    let name: String
    let store: OffsetStore
    /// `inFlight`: a batch is being fetched or applied; `revoking`: a revoke waits for it.
    private let gate = Mutex((inFlight: false, revoking: false))
    let revocations = Mutex(0)

    init(name: String, store: OffsetStore) {
        self.name = name
        self.store = store
    }

    func partitionsAssigned(_ partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64] {
        store.startOffsets(partitions)
    }

    func partitionsRevoked(_ partitions: [KafkaTopicPartition]) async {
        // Let the in-flight batch finish and commit before the partitions move; start no new one.
        gate.withLock { $0.revoking = true }
        while gate.withLock({ $0.inFlight }) { try? await Task.sleep(for: .milliseconds(5)) }
        gate.withLock { $0.revoking = false }
        revocations.withLock { $0 += 1 }
    }

    func run(_ consumer: KafkaConsumer) async {
        while true {
            let started = gate.withLock { gate in
                if gate.revoking { return false }
                gate.inFlight = true
                return true
            }
            guard started else {
                try? await Task.sleep(for: .milliseconds(5))
                continue
            }
            defer { gate.withLock { $0.inFlight = false } }
            guard let batch = try? await consumer.nextBatch(maxRecords: 50, maxWait: .milliseconds(100)) else { return }
            store.commit(batch, member: name)
        }
    }
}

extension KafkaIntegrationTests {
    @Suite("Kafka consumer group rebalancing")
    struct KafkaRebalanceTests {
        @Test("a member joining and a member leaving move partitions without re-processing committed work")
        func joinAndLeave() async throws {
            let (cluster, topic) = try clusterWithTopic("rebalance", partitions: 4)
            defer { cluster.shutdown() }
            let producer = try testProducer(cluster)
            func produce(_ range: Range<Int>) async {
                let results = await producer.send(range.map { KafkaProducerRecord(topic: topic, key: bytes("k\($0 % 16)"), value: bytes("\($0)")) })
                #expect(results.allSatisfy { (try? $0.get()) != nil })
            }
            let store = OffsetStore()
            let group = uniqueName("group")
            func member(_ name: String) throws -> (GroupMember, KafkaConsumer) {
                let member = GroupMember(name: name, store: store)
                let consumer = try KafkaConsumer(
                    configuration: .init(bootstrapServers: cluster.bootstrapServers, groupID: group, topics: [topic],
                                         clientID: name, sessionTimeout: .seconds(5), bufferCapacity: 200,
                                         extra: ["heartbeat.interval.ms": "300"]),
                    rebalanceListener: member, logger: testLogger)
                return (member, consumer)
            }

            await produce(0..<1_000)
            let (memberA, consumerA) = try member("a")
            let loopA = Task { await memberA.run(consumerA) }
            #expect(await eventually { store.total == 1_000 })

            // B joins: the group rebalances and B takes over some partitions at the committed offsets.
            let (memberB, consumerB) = try member("b")
            let loopB = Task { await memberB.run(consumerB) }
            #expect(await eventually { !consumerB.assignment().isEmpty && consumerA.assignment().count + consumerB.assignment().count == 4 })
            #expect(memberA.revocations.withLock { $0 } >= 1)
            await produce(1_000..<2_000)
            #expect(await eventually { store.total == 2_000 })
            #expect(store.state.withLock { $0.processedBy["b", default: 0] } > 0)

            // B leaves cleanly: A gets every partition back and continues where B stopped.
            await consumerB.close()
            await loopB.value
            #expect(memberB.revocations.withLock { $0 } >= 1)
            #expect(await eventually { consumerA.assignment().count == 4 })
            await produce(2_000..<2_500)
            #expect(await eventually { store.total == 2_500 })

            await consumerA.close()
            await loopA.value
            await producer.shutdown()
            let violations = store.state.withLock { $0.violations }
            #expect(violations.isEmpty, "\(violations.prefix(5))")
            #expect(store.total == 2_500)
        }
    }
}
