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
/// A revoke waits for the in-flight batch to finish before it gives the partitions up — for
/// at most a limit: a batch that outlives it (a database that stopped answering this member)
/// no longer holds up the group's rebalance; its commit is fenced by the claim generation it
/// started under, so if another member claims the partitions first it is rolled back. A batch
/// only takes records of partitions owned at its start.
final class PartitionOwnership: Sendable {
    struct Claim: Sendable, Equatable {
        var generation: Int64
        /// -1 until the first record of the partition was processed.
        var nextOffset: Int64
    }

    private struct State {
        var claims: [KafkaTopicPartition: Claim] = [:]
        var inFlight = false
        var pendingRevokes: [(id: UInt64, partitions: [KafkaTopicPartition], continuation: CheckedContinuation<Bool, Never>)] = []
        var lastRevokeID: UInt64 = 0
    }

    private let state = Mutex(State())

    func assign(_ claims: [KafkaTopicPartition: Claim]) {
        state.withLock { s in for (tp, c) in claims { s.claims[tp] = c } }
    }

    /// Gives up partitions once no batch is in flight, or once `limit` passed: returns whether
    /// the batch (if any) ended first. The claims are removed under the same lock that ends the
    /// batch, so no new batch can take their records in between.
    @discardableResult
    func revoke(_ partitions: [KafkaTopicPartition], waitingAtMost limit: Duration? = nil) async -> Bool {
        // The limit's timer is a child task, cancelled once the batch ended first.
        await withTaskGroup(of: Void.self) { timers in
            let ended = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let pending = state.withLock { s -> UInt64? in
                    guard s.inFlight else {
                        for tp in partitions { s.claims.removeValue(forKey: tp) }
                        return nil
                    }
                    s.lastRevokeID += 1
                    s.pendingRevokes.append((s.lastRevokeID, partitions, continuation))
                    return s.lastRevokeID
                }
                guard let pending else { return continuation.resume(returning: true) }
                if let limit {
                    timers.addTask {
                        guard (try? await Task.sleep(for: limit)) != nil else { return }
                        self.expire(revoke: pending)
                    }
                }
            }
            timers.cancelAll()
            return ended
        }
    }

    /// The revoke's limit passed with the batch still in flight: give the partitions up now.
    private func expire(revoke id: UInt64) {
        let waiter = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            guard let index = s.pendingRevokes.firstIndex(where: { $0.id == id }) else { return nil }
            let expired = s.pendingRevokes.remove(at: index)
            for tp in expired.partitions { s.claims.removeValue(forKey: tp) }
            return expired.continuation
        }
        waiter?.resume(returning: false)
    }

    /// The claim generation of every owned partition.
    func generations() -> [KafkaTopicPartition: Int64] {
        state.withLock { $0.claims.mapValues(\.generation) }
    }

    /// What `begin` takes of a batch.
    struct Begun {
        /// The indices of the items kept.
        var kept: [Int]
        /// The claims they are taken under.
        var claims: [KafkaTopicPartition: Claim]
        /// The offsets missing before a kept record (from the next one expected, or from the
        /// record before it in the batch): records the broker no longer had when they were
        /// fetched (retention, or a bounded log, removed them first). Offsets of a partition are
        /// consecutive otherwise (no producer of the system is transactional, no consumed topic
        /// is compacted).
        var skipped: [(partition: KafkaTopicPartition, offsets: Range<Int64>)]
    }

    /// Marks a batch in flight and keeps the items of partitions still owned under the
    /// claim they were fetched under, and not processed already.
    func begin<Item: ProjectionItem>(_ items: [Item], fetchedUnder generations: [KafkaTopicPartition: Int64]) -> Begun {
        state.withLock { s in
            s.inFlight = true
            var begun = Begun(kept: [], claims: [:], skipped: [])
            var expected: [KafkaTopicPartition: Int64] = [:]
            for index in items.indices {
                let record = items[index].record
                let tp = record.topicPartition
                guard let claim = s.claims[tp], claim.generation == generations[tp],
                      claim.nextOffset < 0 || record.offset >= claim.nextOffset else { continue }
                begun.claims[tp] = claim
                if let next = expected[tp] ?? (claim.nextOffset >= 0 ? claim.nextOffset : nil), record.offset > next {
                    begun.skipped.append((tp, next..<record.offset))
                }
                expected[tp] = record.offset + 1
                begun.kept.append(index)
            }
            return begun
        }
    }

    /// Records the committed positions, drops partitions found lost, and ends the batch.
    /// `lost`: the claims the batch found taken over (only those claims are dropped: after a
    /// revoke that stopped waiting, the partition may already be claimed anew).
    func finish(committed: [KafkaTopicPartition: Claim], lost: [KafkaTopicPartition: Claim]) {
        let waiters = state.withLock { s -> [CheckedContinuation<Bool, Never>] in
            for (tp, claim) in committed where s.claims[tp]?.generation == claim.generation { s.claims[tp] = claim }
            for (tp, claim) in lost where s.claims[tp]?.generation == claim.generation { s.claims.removeValue(forKey: tp) }
            s.inFlight = false
            for pending in s.pendingRevokes { for tp in pending.partitions { s.claims.removeValue(forKey: tp) } }
            defer { s.pendingRevokes.removeAll() }
            return s.pendingRevokes.map(\.continuation)
        }
        waiters.forEach { $0.resume(returning: true) }
    }

    var owned: [KafkaTopicPartition: Claim] { state.withLock { $0.claims } }
}
