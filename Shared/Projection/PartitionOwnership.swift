import Kafka
import Synchronization

/// Anything carrying the record it came from.
protocol ProjectionItem {
    var record: KafkaConsumerRecord { get }
}

/// Which partitions this member owns (with the generation it claimed them at and the next
/// offset it expects), and whether a batch is in flight — shared by the runner loop and
/// the rebalance callbacks.
///
/// A revoke waits for the in-flight batch to finish before it gives the partitions up, and
/// a batch only takes records of partitions owned at its start.
final class PartitionOwnership: Sendable {
    struct Claim: Sendable, Equatable {
        var generation: Int64
        /// -1 until the first record of the partition was processed.
        var nextOffset: Int64
    }

    private struct State {
        var claims: [KafkaTopicPartition: Claim] = [:]
        var inFlight = false
        var pendingRevokes: [([KafkaTopicPartition], CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    func assign(_ claims: [KafkaTopicPartition: Claim]) {
        state.withLock { s in for (tp, c) in claims { s.claims[tp] = c } }
    }

    /// Gives up partitions once no batch is in flight. The claims are removed under the
    /// same lock that ends the batch, so no new batch can take their records in between.
    func revoke(_ partitions: [KafkaTopicPartition]) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { s -> Bool in
                guard s.inFlight else {
                    for tp in partitions { s.claims.removeValue(forKey: tp) }
                    return true
                }
                s.pendingRevokes.append((partitions, continuation))
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// The claim generation of every owned partition.
    func generations() -> [KafkaTopicPartition: Int64] {
        state.withLock { $0.claims.mapValues(\.generation) }
    }

    /// Marks a batch in flight and keeps the items of partitions still owned under the
    /// claim they were fetched under, and not processed already; returns their indices
    /// with the claims they are taken under.
    func begin<Item: ProjectionItem>(_ items: [Item], fetchedUnder generations: [KafkaTopicPartition: Int64])
        -> ([Int], [KafkaTopicPartition: Claim]) {
        state.withLock { s in
            s.inFlight = true
            var claims: [KafkaTopicPartition: Claim] = [:]
            let kept = items.indices.filter { index in
                let record = items[index].record
                guard let claim = s.claims[record.topicPartition], claim.generation == generations[record.topicPartition] else {
                    return false
                }
                claims[record.topicPartition] = claim
                return claim.nextOffset < 0 || record.offset >= claim.nextOffset
            }
            return (kept, claims)
        }
    }

    /// Records the committed positions, drops partitions found lost, and ends the batch.
    func finish(committed: [KafkaTopicPartition: Claim], lost: Set<KafkaTopicPartition>) {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            for (tp, claim) in committed where s.claims[tp]?.generation == claim.generation { s.claims[tp] = claim }
            for tp in lost { s.claims.removeValue(forKey: tp) }
            s.inFlight = false
            for (partitions, _) in s.pendingRevokes { for tp in partitions { s.claims.removeValue(forKey: tp) } }
            defer { s.pendingRevokes.removeAll() }
            return s.pendingRevokes.map(\.1)
        }
        waiters.forEach { $0.resume() }
    }

    var owned: [KafkaTopicPartition: Claim] { state.withLock { $0.claims } }
}
