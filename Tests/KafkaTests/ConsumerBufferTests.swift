@testable import Kafka
import ServiceLogging
import Testing

/// The consumer's buffer and hand-out rules, without a broker.
@Suite("Kafka consumer buffer")
struct ConsumerBufferTests {
    let p0 = KafkaTopicPartition(topic: "t", partition: 0)
    let p1 = KafkaTopicPartition(topic: "t", partition: 1)

    func record(_ partition: KafkaTopicPartition, _ offset: Int64) -> KafkaConsumerRecord {
        KafkaConsumerRecord(topic: partition.topic, partition: partition.partition, offset: offset, key: nil,
                            value: [UInt8(truncatingIfNeeded: offset)], timestamp: nil, headers: [])
    }

    @Test("buffered records of revoked partitions are never handed out after the revoke")
    func revokeDropsBufferedRecords() async throws {
        let core = ConsumerCore(logger: .disabled, listener: nil, capacity: 100)
        core.assigned([p0: 0, p1: 0])
        let generation = core.generation
        core.append([record(p0, 0), record(p1, 0), record(p0, 1)], generation: generation)
        core.revokedAll()
        // Records polled before the revoke but appended after it are dropped too.
        core.append([record(p0, 2)], generation: generation)
        core.assigned([p1: 1])
        core.append([record(p0, 3)], generation: core.generation)  // not assigned any more
        let batch = try await core.records(wanted: 10, maxWait: .zero).get()
        #expect(batch.isEmpty)
        #expect(core.assignment == [p1])
    }

    @Test("a batch returns what arrived when the wait elapses, in order")
    func partialBatchAfterMaxWait() async throws {
        let core = ConsumerCore(logger: .disabled, listener: nil, capacity: 100)
        core.assigned([p0: 5])
        core.append([record(p0, 5), record(p0, 6), record(p0, 7)], generation: core.generation)
        let started = ContinuousClock.now
        let batch = try await core.records(wanted: 10, maxWait: .milliseconds(100)).get()
        #expect(batch.map(\.offset) == [5, 6, 7])
        #expect(ContinuousClock.now - started >= .milliseconds(90))
        #expect(core.positions[p0] == 8)
        let empty = try await core.records(wanted: 10, maxWait: .milliseconds(20)).get()
        #expect(empty.isEmpty)
    }

    @Test("a waiting caller gets its batch as soon as enough records arrive")
    func waiterServedOnArrival() async throws {
        let core = ConsumerCore(logger: .disabled, listener: nil, capacity: 100)
        core.assigned([p0: 0])
        let started = ContinuousClock.now
        // A wait far longer than any scheduling delay: served well before it means served on arrival.
        async let batch = core.records(wanted: 2, maxWait: .seconds(600))
        try await Task.sleep(for: .milliseconds(50))
        core.append([record(p0, 0), record(p0, 1), record(p0, 2)], generation: core.generation)
        let result = await batch
        #expect(try result.get().map(\.offset) == [0, 1])
        #expect(ContinuousClock.now - started < .seconds(120))
    }

    @Test("an idle wait goes on past maxWait and returns with the first record that arrives")
    func idleWaitServedByFirstRecord() async throws {
        let core = ConsumerCore(logger: .disabled, listener: nil, capacity: 100)
        core.assigned([p0: 0])
        let started = ContinuousClock.now
        async let batch = core.records(wanted: 10, maxWait: .milliseconds(20), idleWait: .seconds(600))
        // Well past maxWait: a plain wait would have returned empty by now.
        try await Task.sleep(for: .milliseconds(200))
        core.append([record(p0, 0)], generation: core.generation)
        let result = try await batch.get()
        #expect(result.map(\.offset) == [0])
        #expect(ContinuousClock.now - started >= .milliseconds(190))
        #expect(ContinuousClock.now - started < .seconds(120))
    }

    @Test("an idle wait with nothing arriving returns empty after idleWait, not maxWait")
    func idleWaitElapses() async throws {
        let core = ConsumerCore(logger: .disabled, listener: nil, capacity: 100)
        core.assigned([p0: 0])
        let started = ContinuousClock.now
        let empty = try await core.records(wanted: 10, maxWait: .milliseconds(10), idleWait: .milliseconds(300)).get()
        #expect(empty.isEmpty)
        #expect(ContinuousClock.now - started >= .milliseconds(290))
        // Records already waiting at maxWait are returned then, as without an idle wait.
        core.append([record(p0, 0), record(p0, 1)], generation: core.generation)
        let again = ContinuousClock.now
        let partial = try await core.records(wanted: 10, maxWait: .milliseconds(50), idleWait: .seconds(600)).get()
        #expect(partial.map(\.offset) == [0, 1])
        #expect(ContinuousClock.now - again < .seconds(120))
    }

    @Test("a full buffer stops polling until it has drained to half")
    func backpressure() async throws {
        let core = ConsumerCore(logger: .disabled, listener: nil, capacity: 4)
        core.assigned([p0: 0])
        core.append((0..<4).map { record(p0, $0) }, generation: core.generation)
        #expect(core.backpressureAction() == (.pause, true))
        #expect(core.backpressureAction() == (.none, true))
        _ = try await core.records(wanted: 1, maxWait: .zero).get()
        #expect(core.backpressureAction() == (.none, true))
        _ = try await core.records(wanted: 1, maxWait: .zero).get()
        #expect(core.backpressureAction() == (.resume, false))
    }

    @Test("after close, waiting and new callers are told the consumer shut down")
    func closeEndsWaiters() async {
        let core = ConsumerCore(logger: .disabled, listener: nil, capacity: 10)
        core.assigned([p0: 0])
        async let waiting = core.records(wanted: 1, maxWait: nil)
        try? await Task.sleep(for: .milliseconds(30))
        core.closed()
        let result = await waiting
        #expect(throws: KafkaError.self) { try result.get() }
        let after = await core.records(wanted: 1, maxWait: .zero)
        #expect((try? after.get()) == nil)
    }

    @Test("a cancelled wait returns promptly")
    func cancellation() async throws {
        let core = ConsumerCore(logger: .disabled, listener: nil, capacity: 10)
        core.assigned([p0: 0])
        let task = Task { await core.records(wanted: 5, maxWait: nil) }
        try await Task.sleep(for: .milliseconds(30))
        task.cancel()
        let result = await task.value
        #expect(try result.get().isEmpty)
    }
}
