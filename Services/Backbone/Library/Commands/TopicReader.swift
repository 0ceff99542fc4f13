import Foundation
import Kafka
import ServiceLogging

/// Reads records for `tail`, `dump` and `dlq` without disturbing anyone: a consumer that
/// never commits, assigned the planned partitions directly for a bounded read (no group to
/// join), or — following — in a throwaway group of its own (a fresh unique id) started at the
/// planned offsets by its rebalance listener. Without `follow` it stops once every partition has
/// been read up to the high watermark captured when the plan was made.
struct TopicReader {
    struct Filter {
        var key: [UInt8]?
        var limit: Int?
        /// Only records whose `traceparent` header names this trace id.
        var traceID: String?
    }

    let settings: KafkaSettings
    /// Without `follow`: give up when no record arrived for this long while partitions are
    /// still short of their captured high watermark.
    var idleTimeout: Duration = .seconds(30)

    /// Writes matching records to `writer`; returns how many. Ends early when the task is
    /// cancelled (Ctrl-C while following).
    func read(topics: [String], plan: TopicReadPlan, follow: Bool, filter: Filter, writer: LineWriter) async throws -> Int {
        if filter.limit == 0 { return 0 }
        var count = 0
        do {
            try await scan(topics: topics, plan: plan, follow: follow) { record in
                if let notBefore = plan.partitions[record.topicPartition]?.notBefore,
                   (record.timestamp ?? .distantPast) < notBefore { return true }
                if let key = filter.key, record.key != key { return true }
                if let traceID = filter.traceID, record.trace?.traceID != traceID { return true }
                writer.write(line: RecordLine.encode(record))
                count += 1
                if let limit = filter.limit, count >= limit { return false }
                return true
            } afterBatch: {
                writer.flush()
            }
        } catch {
            writer.flush()
            throw error
        }
        writer.flush()
        return count
    }

    /// Hands every record of the planned partitions, from its planned start, to `handle`
    /// (which returns false to stop); `afterBatch` runs after each non-empty batch. Without
    /// `follow` it ends at the captured high watermarks.
    func scan(topics: [String], plan: TopicReadPlan, follow: Bool, handle: (KafkaConsumerRecord) throws -> Bool,
              afterBatch: () -> Void = {}) async throws {
        var pending = plan.pending
        if !follow && pending.isEmpty { return }
        let listener = StartOffsetListener(starts: plan.partitions.mapValues(\.start))
        var configuration = KafkaConsumerConfiguration(
            bootstrapServers: settings.brokers, groupID: "backbone-cli-\(UUID().uuidString.lowercased())", topics: topics,
            clientID: "backbone-cli", bufferCapacity: 2_000)
        // A bounded read takes its partitions directly: no group to join, no rebalance wait.
        if !follow { configuration.assignment = plan.partitions.filter { pending.contains($0.key) }.mapValues(\.start) }
        let consumer: KafkaConsumer
        do {
            consumer = try KafkaConsumer(configuration: configuration, rebalanceListener: listener, logger: settings.logger)
        } catch {
            throw CommandError(code: .kafkaUnavailable, message: "cannot start a consumer: \(error.message)", context: settings.brokers)
        }
        var lastProgress = ContinuousClock.now
        do {
            reading: while !Task.isCancelled {
                let batch: [KafkaConsumerRecord]
                do {
                    batch = try await consumer.nextBatch(maxRecords: 500, maxWait: .milliseconds(500))
                } catch {
                    throw CommandError(code: .kafkaUnavailable, message: "consuming failed: \(error.message)", context: settings.brokers,
                                       isRetriable: error.isRetriable)
                }
                for record in batch {
                    let partition = record.topicPartition
                    guard let planned = plan.partitions[partition] else { continue }  // not selected (--partition)
                    if !follow && record.offset >= planned.high { pending.remove(partition); continue }
                    listener.advance(partition, to: record.offset + 1)
                    lastProgress = .now
                    if !follow && record.offset >= planned.high - 1 { pending.remove(partition) }
                    if try !handle(record) { break reading }
                }
                if !batch.isEmpty { afterBatch() }
                if !follow {
                    if pending.isEmpty { break }
                    if ContinuousClock.now - lastProgress > idleTimeout {
                        let names = pending.sorted().map { "\($0) (up to offset \(plan.partitions[$0]!.high - 1))" }
                        throw CommandError(code: .timedOut,
                                           message: "no records for \(idleTimeout) while still reading \(names.joined(separator: ", "))",
                                           context: settings.brokers, isRetriable: true)
                    }
                }
            }
        } catch {
            await consumer.close()
            throw error
        }
        await consumer.close()
    }
}
