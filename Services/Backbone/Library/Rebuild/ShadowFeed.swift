import Foundation
import Kafka

/// The records of a shadow model's topics (one or several — the catalog reads three): a
/// consumer in a throwaway group of its own (never committing anything, so no live group
/// notices it), started at the shadow's positions in every partition of every topic. Records
/// at or beyond a partition's bound — the live consumer's position — are held back until the
/// bound moves, so the shadow never gets ahead of the live model.
// @unchecked Sendable: used by one task at a time — the rebuild's fetch stage, which the
// apply stage awaits before it fetches again — never concurrently.
final class ShadowFeed: @unchecked Sendable {
    private let consumer: KafkaConsumer
    private let listener: StartOffsetListener
    private let topics: [String]
    private var held: [KafkaTopicPartition: [KafkaConsumerRecord]] = [:]
    private(set) var heldCount = 0
    /// Fetching pauses while this many records are held back.
    let holdLimit: Int

    init(settings: KafkaSettings, topics: [String], starts: [KafkaTopicPartition: Int64], holdLimit: Int = 50_000) throws {
        self.topics = topics
        self.holdLimit = holdLimit
        listener = StartOffsetListener(starts: starts)
        do {
            consumer = try KafkaConsumer(
                configuration: KafkaConsumerConfiguration(
                    bootstrapServers: settings.brokers, groupID: "backbone-rebuild-\(UUID().uuidString.lowercased())", topics: topics,
                    clientID: "backbone-rebuild", bufferCapacity: 20_000, extra: settings.consumerProperties),
                rebalanceListener: listener, logger: settings.logger)
        } catch {
            throw CommandError(code: .kafkaUnavailable, message: "cannot start a consumer: \(error.message)", context: settings.brokers)
        }
    }

    func close() async { await consumer.close() }

    /// Up to `limit` records at or after `positions` and below `bounds`, in offset order
    /// within each partition, fetching (up to `wait`) when none is held; and for each
    /// partition they cover, the position after them. A partition whose next record lies at
    /// or beyond its bound (no records in between: an aborted transaction's offsets) moves
    /// straight to the bound.
    func take(positions: [KafkaTopicPartition: Int64], bounds: [KafkaTopicPartition: Int64], limit: Int, wait: Duration) async throws
        -> (records: [KafkaConsumerRecord], next: [KafkaTopicPartition: Int64]) {
        var taken = collect(positions: positions, bounds: bounds, limit: limit)
        if taken.records.isEmpty, heldCount < holdLimit,
           bounds.contains(where: { $0.value > (taken.next[$0.key] ?? positions[$0.key] ?? 0) }) {
            let batch: [KafkaConsumerRecord]
            do {
                batch = try await consumer.nextBatch(maxRecords: max(limit, 500), maxWait: wait)
            } catch {
                if Task.isCancelled { throw CancellationError() }
                throw CommandError(code: .kafkaUnavailable, message: "consuming \(topics.joined(separator: ", ")) failed: \(error.message)",
                                   isRetriable: true)
            }
            for record in batch {
                let tp = KafkaTopicPartition(topic: record.topic, partition: record.partition)
                guard bounds[tp] != nil else { continue }  // not one of the rebuild's partitions
                let expected = held[tp]?.last.map { $0.offset + 1 } ?? positions[tp] ?? 0
                guard record.offset >= expected else { continue }  // already applied or held (a re-fetch after a rebalance)
                held[tp, default: []].append(record)
                heldCount += 1
            }
            let more = collect(positions: positions, bounds: bounds, limit: limit)
            taken.records += more.records
            taken.next.merge(more.next) { $1 }
        }
        for (partition, next) in taken.next {
            listener.advance(partition, to: next)
        }
        return taken
    }

    /// Takes the held records partition by partition (topic, then partition order). Only the
    /// order within a partition is kept, which is all a live consumer is promised too: a
    /// projection fed by several topics already takes their records in any relative order.
    private func collect(positions: [KafkaTopicPartition: Int64], bounds: [KafkaTopicPartition: Int64], limit: Int)
        -> (records: [KafkaConsumerRecord], next: [KafkaTopicPartition: Int64]) {
        var records: [KafkaConsumerRecord] = []
        var next: [KafkaTopicPartition: Int64] = [:]
        for (partition, bound) in bounds.sorted(by: { $0.key < $1.key }) {
            let position = positions[partition] ?? 0
            guard var queue = held[partition], !queue.isEmpty else { continue }
            var dropped = 0
            while dropped < queue.count, queue[dropped].offset < position { dropped += 1 }
            var count = 0
            while dropped + count < queue.count, queue[dropped + count].offset < bound, records.count < limit {
                records.append(queue[dropped + count])
                count += 1
            }
            if count > 0 { next[partition] = queue[dropped + count - 1].offset + 1 }
            if dropped + count < queue.count, queue[dropped + count].offset >= bound, (next[partition] ?? position) < bound {
                next[partition] = bound
            }
            if dropped + count > 0 {
                queue.removeFirst(dropped + count)
                heldCount -= dropped + count
                held[partition] = queue
            }
        }
        return (records, next)
    }
}
