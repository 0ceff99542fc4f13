import Kafka
@testable import Projection
import Testing

/// A revoke waits for the batch in flight, but not for ever: a batch stuck on a database that
/// stopped answering must not hold up the group's rebalance.
@Suite("Revoke waits for the batch in flight, at most a limit")
struct RevokeWaitTests {
    struct Item: ProjectionItem { var record: KafkaConsumerRecord }

    let tp = KafkaTopicPartition(topic: "t", partition: 0)

    @Test("with no batch in flight the partitions go at once; a batch that ends in time releases the revoke")
    func inTime() async {
        let ownership = PartitionOwnership()
        ownership.assign([tp: .init(generation: 1, nextOffset: 5)])
        #expect(await ownership.revoke([tp], waitingAtMost: .seconds(5)))
        #expect(ownership.owned.isEmpty)

        ownership.assign([tp: .init(generation: 2, nextOffset: 5)])
        _ = ownership.begin([Item](), fetchedUnder: [:])
        let started = ContinuousClock.now
        async let revoked = ownership.revoke([tp], waitingAtMost: .seconds(5))
        try? await Task.sleep(for: .milliseconds(100))
        #expect(ownership.owned[tp] != nil, "held while the batch runs")
        ownership.finish(committed: [tp: .init(generation: 2, nextOffset: 9)], lost: [:])
        #expect(await revoked)
        #expect(ContinuousClock.now - started < .seconds(4))
        #expect(ownership.owned.isEmpty)
    }

    @Test("a batch that outlives the limit: the partitions go anyway, and its late end touches no newer claim")
    func stuckBatch() async {
        let ownership = PartitionOwnership()
        ownership.assign([tp: .init(generation: 4, nextOffset: 10)])
        _ = ownership.begin([Item](), fetchedUnder: [:])
        let started = ContinuousClock.now
        #expect(await ownership.revoke([tp], waitingAtMost: .milliseconds(200)) == false)
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        #expect(ownership.owned.isEmpty)
        // The partition comes back to this member at a new generation while the old batch still
        // runs; the old batch then ends, having found its claim taken over (or committed under
        // the old one): the new claim stays as it is.
        ownership.assign([tp: .init(generation: 5, nextOffset: 10)])
        ownership.finish(committed: [tp: .init(generation: 4, nextOffset: 20)], lost: [tp: .init(generation: 4, nextOffset: 10)])
        #expect(ownership.owned[tp] == .init(generation: 5, nextOffset: 10))
    }
}
