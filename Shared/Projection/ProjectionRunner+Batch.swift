import Contracts
import Foundation
import Kafka
import Logging
import Metrics
import Postgres

/// A partition was claimed by another member (its generation moved on): this member's
/// work on it is rolled back and the partition dropped.
struct LostPartitions: Error {
    let partitions: Set<KafkaTopicPartition>
}

extension ProjectionRunner {
    /// One record of a batch: its decoded event, or `nil` when it was poison (already sent
    /// to the dead-letter topic; only its offset still has to be passed).
    struct Item: Sendable {
        let record: KafkaConsumerRecord
        let event: P.Event?
    }

    /// Applies and commits a batch of records; never skips a record except into the DLQ.
    func process(_ records: [KafkaConsumerRecord]) async {
        let (kept, initialClaims) = ownership.begin(records)
        var claims = initialClaims
        var lost = Set<KafkaTopicPartition>()
        let started = ContinuousClock.now
        do {
            if !kept.isEmpty {
                let items = try await decode(kept)
                try await commit(items, claims: &claims, lost: &lost)
                let seconds = Self.seconds(ContinuousClock.now - started)
                metrics.observe("projection_batch_seconds", seconds, labels: ["group": configuration.groupID])
                metrics.increment("projection_records_total", by: Double(kept.count), labels: ["group": configuration.groupID])
            }
        } catch {
            // Only cancellation gets here: the batch was not committed and will be replayed.
            logger.notice("batch abandoned", metadata: ["error": "\(error)"])
        }
        ownership.finish(committed: claims.filter { initialClaims[$0.key] != $0.value }, lost: lost)
        if !lost.isEmpty {
            logger.warning("partitions lost to another member; their uncommitted work was rolled back",
                           metadata: ["kafka.partitions": lost.map { "\($0.topic)/\($0.partition)" }.sorted().joined(separator: ",")])
        }
    }

    /// Decodes every record; undecodable ones go to `<topic>.dlq` (acknowledged before the
    /// offset that passes them can commit).
    func decode(_ records: [KafkaConsumerRecord]) async throws -> [Item] {
        var items: [Item] = []
        var poison: [(KafkaConsumerRecord, String)] = []
        for record in records {
            do {
                items.append(Item(record: record, event: try projection.decode(record)))
            } catch {
                items.append(Item(record: record, event: nil))
                poison.append((record, "\(error)"))
            }
        }
        if !poison.isEmpty { try await sendToDeadLetters(poison) }
        return items
    }

    /// Commits items in one transaction; a batch that keeps failing for a non-transient
    /// reason is split, and a single record that keeps failing goes to the DLQ.
    func commit(_ items: [Item], claims: inout [KafkaTopicPartition: PartitionOwnership.Claim],
                lost: inout Set<KafkaTopicPartition>) async throws {
        var pending = items
        var attempts = 0
        while true {
            pending.removeAll { lost.contains($0.record.topicPartition) }
            if pending.isEmpty { return }
            do {
                let positions = try await transact(pending, claims: claims)
                for (tp, next) in positions { claims[tp]?.nextOffset = next }
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
                    for item in pending { try await commit([item], claims: &claims, lost: &lost) }
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

    /// One transaction: apply the events, advance every partition's stored offset (compare-
    /// and-set on this member's claim), commit, then run the projection's after-commit work.
    func transact(_ items: [Item], claims: [KafkaTopicPartition: PartitionOwnership.Claim]) async throws -> [KafkaTopicPartition: Int64] {
        var next: [KafkaTopicPartition: Int64] = [:]
        for item in items { next[item.record.topicPartition] = max(next[item.record.topicPartition] ?? 0, item.record.offset + 1) }
        let events = items.compactMap { item in
            item.event.map { ProjectedEvent(event: $0, topic: item.record.topic, partition: item.record.partition, offset: item.record.offset) }
        }
        let positions = next
        let effects = try await withRetries("apply batch") {
            try await self.database.withTransaction { connection in
                let effects = try await self.projection.apply(events, in: connection)
                var lostNow = Set<KafkaTopicPartition>()
                for (tp, offset) in positions {
                    guard let claim = claims[tp], try await self.offsets.advance(tp, from: claim, to: offset, in: connection) else {
                        lostNow.insert(tp)
                        continue
                    }
                }
                if !lostNow.isEmpty { throw LostPartitions(partitions: lostNow) }
                return effects
            }
        }
        do {
            try await withRetries("after commit") { try await self.projection.afterCommit(effects) }
        } catch {
            logger.error("after-commit work failed", metadata: ["error": "\(error)"])
        }
        return positions
    }

    func sendToDeadLetters(_ poison: [(KafkaConsumerRecord, String)]) async throws {
        let records = try poison.map { record, error in
            let letter = DeadLetterRecord(originalTopic: record.topic, partition: record.partition, offset: record.offset,
                                          consumerGroup: configuration.groupID, error: error, key: record.key,
                                          value: record.value, failedAt: Date())
            return KafkaProducerRecord(topic: Topics.deadLetter(for: record.topic), key: record.key,
                                       value: try ContractCoding.encode(letter))
        }
        try await withRetries("dead-letter") {
            for result in await self.deadLetters.send(records) { _ = try result.get() }
        }
        metrics.increment("projection_dead_letters_total", by: Double(poison.count), labels: ["group": configuration.groupID])
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
