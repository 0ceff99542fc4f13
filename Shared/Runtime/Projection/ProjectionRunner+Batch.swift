import Contracts
import Foundation
import Kafka
import Lifecycle
import Postgres
import PrometheusMetrics
import ServiceLogging
import Synchronization

/// A partition was claimed by another member (its generation moved on): this member's
/// work on it is rolled back and the partition dropped.
struct LostPartitions: Error {
    let partitions: Set<KafkaTopicPartition>
}

extension ProjectionRunner {
    /// One record of a batch: its decoded event, or `nil` when it was poison (already sent
    /// to the dead-letter topic; only its offset still has to be passed). A class: a batch's
    /// items pass through several arrays (decode, ownership, commit), and a reference is one
    /// retain where the record and its event would be a copy of every string they hold.
    final class Item: Sendable, ProjectionItem {
        let record: KafkaConsumerRecord
        let event: P.Event?
        /// The record's trace, read once from its headers (the apply and the log line both take it).
        let trace: TraceContext?

        init(record: KafkaConsumerRecord, event: P.Event?) {
            self.record = record
            self.event = event
            self.trace = record.trace
        }
    }

    /// Records fetched together, decoded, with the claim generation of each partition at
    /// fetch time: if a partition is revoked and claimed again before the batch is applied,
    /// its records are dropped (the consumer fetches them again from the stored offset).
    struct FetchedBatch: Sendable {
        let items: [Item]
        let generations: [KafkaTopicPartition: Int64]
        let poison: [Int: String]
    }

    /// Fetches the next batch and decodes it (on both cores when it is large). Pure: nothing
    /// is written until the batch is applied.
    func fetch(_ consumer: KafkaConsumer) async throws -> FetchedBatch {
        let records = try await timed("fetch") {
            try await consumer.nextBatch(maxRecords: configuration.maxBatchRecords, maxWait: configuration.maxBatchWait,
                                      idleWait: configuration.idleBatchWait)
        }
        let generations = ownership.generations()
        guard !records.isEmpty else { return FetchedBatch(items: [], generations: generations, poison: [:]) }
        return try await timed("decode") {
            let half = records.count / 2
            let chunks = records.count >= 256 ? [Array(records[..<half]), Array(records[half...])] : [records]
            let decoded = await withTaskGroup(of: (Int, [(Item, String?)]).self) { group in
                for (index, chunk) in chunks.enumerated() {
                    group.addTask {
                        // Yields between slices, so the apply stage's continuations (each
                        // statement's result) are not held up behind a whole chunk.
                        var part: [(Item, String?)] = []
                        part.reserveCapacity(chunk.count)
                        for start in stride(from: 0, to: chunk.count, by: Self.decodeSlice) {
                            if start > 0 { await Task.yield() }
                            for record in chunk[start..<min(start + Self.decodeSlice, chunk.count)] { part.append(self.decodeOne(record)) }
                        }
                        return (index, part)
                    }
                }
                var parts = [[(Item, String?)]](repeating: [], count: chunks.count)
                for await (index, part) in group { parts[index] = part }
                return parts.flatMap { $0 }
            }
            var poison: [Int: String] = [:]
            for (index, (_, error)) in decoded.enumerated() { if let error { poison[index] = error } }
            return FetchedBatch(items: decoded.map(\.0), generations: generations, poison: poison)
        }
    }

    /// Records decoded between yields.
    static var decodeSlice: Int { 64 }

    func decodeOne(_ record: KafkaConsumerRecord) -> (Item, String?) {
        do {
            return (Item(record: record, event: try projection.decode(record)), nil)
        } catch {
            return (Item(record: record, event: nil), "\(error)")
        }
    }

    /// Applies and commits a batch; never skips a record except into the DLQ. Returns the
    /// after-commit work, or nil when nothing was committed.
    func process(_ batch: FetchedBatch) async -> [P.Effects]? {
        let begun = ownership.begin(batch.items, fetchedUnder: batch.generations)
        let (kept, initialClaims) = (begun.kept, begun.claims)
        for (tp, offsets) in begun.skipped {
            logger.error("records removed by the broker before this projection read them; they are not applied", metadata: [
                "kafka.topic": "\(tp.topic)", "kafka.partition": "\(tp.partition)", "offsets.expected": "\(offsets.lowerBound)",
                "offsets.next": "\(offsets.upperBound)", "records.skipped": "\(offsets.count)"])
            metrics.increment("projection_records_skipped_total", by: Double(offsets.count), labels: ["group": configuration.groupID])
        }
        var claims = initialClaims
        var lost = Set<KafkaTopicPartition>()
        var effects: [P.Effects] = []
        let started = ContinuousClock.now
        do {
            if !kept.isEmpty {
                let poison = kept.compactMap { index in batch.poison[index].map { (batch.items[index].record, $0) } }
                if let (first, error) = poison.first {
                    // One line a batch (a flood of bad records must not flood the log); each
                    // dead letter carries its own origin and error.
                    logger.error("records cannot be decoded; sent to the dead-letter topic", metadata: [
                        "records.count": "\(poison.count)", "kafka.topic": first.topic, "kafka.partition": "\(first.partition)",
                        "kafka.offset": "\(first.offset)", "error": "\(error)"])
                    try await sendToDeadLetters(poison)
                }
                try await commit(kept.map { batch.items[$0] }, claims: &claims, lost: &lost, effects: &effects)
                metrics.observe("projection_batch_seconds", (ContinuousClock.now - started).timeInterval, labels: ["group": configuration.groupID])
                metrics.increment("projection_records_total", by: Double(kept.count), labels: ["group": configuration.groupID])
                lagClock.withLock { $0.applied(kept.map { batch.items[$0].record }) }
            }
        } catch {
            // Only cancellation gets here: the batch was not committed and will be replayed.
            logger.notice("batch abandoned", metadata: ["error": "\(error)"])
        }
        ownership.finish(committed: claims.filter { initialClaims[$0.key] != $0.value },
                         lost: initialClaims.filter { lost.contains($0.key) })
        if !lost.isEmpty {
            logger.warning("partitions lost to another member; their uncommitted work was rolled back",
                           metadata: ["kafka.partitions": lost.map { "\($0.topic)/\($0.partition)" }.sorted().joined(separator: ",")])
        }
        return effects.isEmpty ? nil : effects
    }

    /// Publishes what committed batches produced, in order; failures are logged (the read
    /// model is already committed).
    func runAfterCommit(_ effects: [P.Effects]) async {
        for effect in effects {
            do {
                try await timed("after_commit") { try await withRetries("after commit") { try await self.projection.afterCommit(effect) } }
            } catch {
                logger.error("after-commit work failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Commits items in one transaction; a batch that keeps failing for a non-transient
    /// reason is split, and a single record that keeps failing goes to the DLQ.
    func commit(_ items: [Item], claims: inout [KafkaTopicPartition: PartitionOwnership.Claim],
                lost: inout Set<KafkaTopicPartition>, effects: inout [P.Effects]) async throws {
        var pending = items
        var attempts = 0
        while true {
            pending.removeAll { lost.contains($0.record.topicPartition) }
            if pending.isEmpty { return }
            do {
                let (positions, effect) = try await transact(pending, claims: claims)
                for (tp, next) in positions { claims[tp]?.nextOffset = next }
                effects.append(effect)
                logTraced(pending)
                return
            } catch let error as LostPartitions {
                lost.formUnion(error.partitions)
            } catch let error where !(error is CancellationError) {
                attempts += 1
                if attempts < configuration.maxAttempts {
                    logger.warning("batch failed; retrying", metadata: ["error": "\(error)", "attempt": "\(attempts)"])
                    try await Task.sleep(for: .milliseconds(100 * attempts))
                    continue
                }
                if pending.count > 1 {
                    logger.warning("batch keeps failing; applying its records one by one", metadata: ["error": "\(error)"])
                    for item in pending { try await commit([item], claims: &claims, lost: &lost, effects: &effects) }
                    return
                }
                let record = pending[0].record
                logger.error("record cannot be applied; sent to the dead-letter topic", metadata: [
                    "kafka.topic": record.topic, "kafka.partition": "\(record.partition)", "kafka.offset": "\(record.offset)",
                    "error": "\(error)"])
                try await sendToDeadLetters([(record, "apply failed: \(error)")])
                pending = [Item(record: record, event: nil)]
                attempts = 0
            }
        }
    }

    /// One transaction: apply the events and advance every partition's stored offset
    /// (compare-and-set on this member's claim).
    func transact(_ items: [Item], claims: [KafkaTopicPartition: PartitionOwnership.Claim]) async throws -> ([KafkaTopicPartition: Int64], P.Effects) {
        var next: [KafkaTopicPartition: Int64] = [:]
        for item in items { next[item.record.topicPartition] = max(next[item.record.topicPartition] ?? 0, item.record.offset + 1) }
        let events = items.compactMap { item in
            item.event.map { ProjectedEvent(event: $0, topic: item.record.topic, partition: item.record.partition, offset: item.record.offset,
                                            trace: item.trace) }
        }
        let positions = next
        let effects = try await timed("apply") { try await withRetries("apply batch") {
            try await self.database.withTransaction { connection in
                let effects = try await self.projection.apply(events, in: connection)
                var lostNow = Set(positions.keys.filter { claims[$0] == nil })
                lostNow.formUnion(try await self.offsets.advance(
                    positions.compactMap { tp, offset in claims[tp].map { (tp, $0, offset) } }, in: connection))
                if !lostNow.isEmpty { throw LostPartitions(partitions: lostNow) }
                return effects
            }
        } }
        return (positions, effects)
    }

    /// One line per committed record of a sampled trace (`trace_id`): what this consumer did
    /// with it — the path of one event through the system is a `grep` of its trace id.
    func logTraced(_ items: [Item]) {
        for item in items {
            guard let trace = item.trace, trace.sampled else { continue }
            logger.info(item.event == nil ? "traced record skipped (dead-lettered)" : "traced record applied", metadata: [
                "trace_id": trace.traceID, "projection.group": configuration.groupID, "kafka.topic": item.record.topic,
                "kafka.partition": "\(item.record.partition)", "kafka.offset": "\(item.record.offset)"])
        }
    }

    func sendToDeadLetters(_ poison: [(KafkaConsumerRecord, String)]) async throws {
        let records = try poison.map { record, error in
            try KafkaProducerRecord.deadLetter(of: record, group: configuration.groupID, error: error)
        }
        try await withRetries("dead-letter") {
            for result in await self.deadLetters.send(records) { _ = try result.get() }
        }
        metrics.increment("projection_dead_letters_total", by: Double(poison.count), labels: ["group": configuration.groupID])
    }

    /// Runs `body` and records its duration as `projection_stage_seconds{stage}`.
    func timed<T>(_ stage: String, _ body: () async throws -> T) async throws -> T {
        let started = ContinuousClock.now
        defer {
            metrics.observe("projection_stage_seconds", (ContinuousClock.now - started).timeInterval,
                            labels: ["group": configuration.groupID, "stage": stage])
        }
        return try await body()
    }
}
