import CRdKafka
import Foundation
import ServiceLogging
import Synchronization

/// A consumer-group member. Offsets are not committed to Kafka: the
/// `KafkaRebalanceListener` supplies each assigned partition's start offset (the caller keeps
/// its positions elsewhere, e.g. in Postgres, in the same transaction as its work).
///
/// Threads: a dedicated poll thread calls `rd_kafka_consumer_poll`, runs rebalances (blocking
/// itself while the async listener runs) and fills a bounded buffer; `nextBatch` and `records`
/// take from that buffer. When the buffer is full the consumer pauses its partitions.
public final class KafkaConsumer: Sendable {
    let core: ConsumerCore
    private let client: RdKafkaClient
    private let pollThread: PollThread

    public init(configuration: KafkaConsumerConfiguration, rebalanceListener: (any KafkaRebalanceListener)?,
                logger: Logger) throws(KafkaError) {
        guard !configuration.topics.isEmpty || configuration.assignment?.isEmpty == false else {
            throw KafkaError(code: .invalidArgument, message: "a consumer needs at least one topic")
        }
        var logger = logger
        logger[metadataKey: "kafka.group"] = configuration.groupID
        logger[metadataKey: "kafka.client"] = configuration.clientID
        let core = ConsumerCore(logger: logger, listener: rebalanceListener, capacity: configuration.bufferCapacity,
                                listenerTimeout: configuration.rebalanceListenerTimeout)
        let client = try RdKafkaClient(type: RD_KAFKA_CONSUMER, properties: configuration.properties, context: core) { conf in
            rd_kafka_conf_set_rebalance_cb(conf, consumerRebalanceCallback)
            rd_kafka_conf_set_error_cb(conf, rdKafkaErrorCallback)
        }
        rd_kafka_poll_set_consumer(client.pointer)
        if let assignment = configuration.assignment {
            let list = rd_kafka_topic_partition_list_new(Int32(assignment.count))!
            let starts = assignment.mapValues { $0 < 0 ? crdkafka_offset_beginning() : $0 }
            for (partition, offset) in starts {
                rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition).pointee.offset = offset
            }
            core.assigned(starts)
            let err = rd_kafka_assign(client.pointer, list)
            rd_kafka_topic_partition_list_destroy(list)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                throw KafkaError(rdKafka: err, context: "assign \(assignment.keys.sorted().map(\.description).joined(separator: ","))")
            }
        } else {
            let topics = rd_kafka_topic_partition_list_new(Int32(configuration.topics.count))
            for topic in configuration.topics {
                rd_kafka_topic_partition_list_add(topics, topic, -1)
            }
            let err = rd_kafka_subscribe(client.pointer, topics)
            rd_kafka_topic_partition_list_destroy(topics)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                throw KafkaError(rdKafka: err, context: "subscribe to \(configuration.topics.joined(separator: ","))")
            }
        }
        self.core = core
        self.client = client
        self.pollThread = PollThread(name: "kafka-consumer-poll") { thread in
            ConsumerPollLoop(core: core, client: client).run(thread)
        }
        logger.debug("Kafka consumer subscribed", metadata: ["kafka.topics": configuration.topics.joined(separator: ",")])
    }

    deinit {
        pollThread.requestStop()
    }

    /// Returns up to `maxRecords` records, waiting at most `maxWait` for that many to arrive
    /// (possibly returning fewer, or none). Records of one partition come in offset order.
    /// With `idleWait`, a wait that found nothing by `maxWait` returns with the first record
    /// that arrives after it, or empty once `idleWait` passed in all: an idle caller wakes
    /// every `idleWait`, a busy one still gets its batch after `maxWait`.
    /// - Throws: `.shutdown` after `close()`, `.rebalanceFailed` or `.fatal` if the consumer failed.
    public func nextBatch(maxRecords: Int, maxWait: Duration, idleWait: Duration? = nil) async throws(KafkaError) -> [KafkaConsumerRecord] {
        try await core.records(wanted: maxRecords, maxWait: maxWait, idleWait: idleWait).get()
    }

    /// The records one at a time, as an async sequence that ends when the consumer closes.
    public var records: KafkaConsumerRecords { KafkaConsumerRecords(core: core) }

    /// The partitions currently assigned to this member.
    public func assignment() -> [KafkaTopicPartition] { core.assignment }

    /// For each assigned partition: high watermark − next offset to hand out (from the
    /// watermarks last seen in fetch responses; partitions without one yet are omitted).
    public func lag() -> [KafkaTopicPartition: Int64] {
        var lags: [KafkaTopicPartition: Int64] = [:]
        for (partition, position) in core.positions {
            var low: Int64 = -1
            var high: Int64 = -1
            let err = rd_kafka_get_watermark_offsets(client.pointer, partition.topic, partition.partition, &low, &high)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR, high >= 0 else { continue }
            let start = position >= 0 ? position : max(low, 0)
            lags[partition] = max(0, high - start)
        }
        return lags
    }

    /// Records buffered and not yet handed out (for metrics).
    public var bufferedCount: Int { core.state.withLock { $0.count } }

    /// Leaves the group (the listener sees the revoke), then stops. Idempotent.
    public func close() async {
        await pollThread.stop()
    }
}

/// The body of the consumer's poll thread.
struct ConsumerPollLoop {
    let core: ConsumerCore
    let client: RdKafkaClient
    private let maxBatch = 512

    func run(_ thread: PollThread) {
        var batch: [KafkaConsumerRecord] = []
        var batchGeneration = core.generation
        while !thread.isStopRequested {
            // Seeks run here, between polls, when no polled record is held outside the buffer.
            for seek in core.takePendingSeeks() { seek.continuation.resume(returning: performSeek(seek.offsets)) }
            // Backpressure: while our buffer is full, stop polling. librdkafka keeps prefetching
            // into its own bounded queue (`queued.max.messages.kbytes`) and then stops fetching;
            // positions never move. (Pausing partitions instead purges that queue, and every
            // pause/resume cycle refetches it.)
            if core.backpressureAction().paused {
                usleep(5_000)
                continue
            }
            var timeout: Int32 = 100
            while batch.count < maxBatch, let message = rd_kafka_consumer_poll(client.pointer, timeout) {
                timeout = 0
                // A rebalance may have run inside this poll: the message belongs to the new generation.
                let generation = core.generation
                if generation != batchGeneration {
                    core.append(batch, generation: batchGeneration)
                    batch = []
                    batchGeneration = generation
                }
                if let record = handle(message) { batch.append(record) }
                rd_kafka_message_destroy(message)
            }
            core.append(batch, generation: batchGeneration)
            batch = []
            batchGeneration = core.generation
        }
        let err = rd_kafka_consumer_close(client.pointer)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            core.logger.warning("Kafka consumer close: \(String(cString: rd_kafka_err2str(err)))")
        }
        core.closed()
        core.logger.debug("Kafka consumer closed")
    }

    private func handle(_ message: UnsafeMutablePointer<rd_kafka_message_t>) -> KafkaConsumerRecord? {
        let m = message.pointee
        guard m.err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            if m.err == RD_KAFKA_RESP_ERR__PARTITION_EOF { return nil }
            let error = KafkaError(rdKafka: m.err, context: "consume")
            if m.err == RD_KAFKA_RESP_ERR__FATAL {
                core.fail(client.fatalError ?? error)
            }
            core.logger.warning("Kafka consumer error: \(error.message)", metadata: ["kafka.error": error.code.rawValue])
            return nil
        }
        let topic = String(cString: rd_kafka_topic_name(m.rkt))
        let key = m.key.map { Array(UnsafeRawBufferPointer(start: $0, count: m.key_len)) }
        let value = m.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: m.len)) } ?? []
        var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let milliseconds = rd_kafka_message_timestamp(message, &timestampType)
        let timestamp = milliseconds >= 0 ? Date(timeIntervalSince1970: Double(milliseconds) / 1000) : nil
        return KafkaConsumerRecord(topic: topic, partition: m.partition, offset: m.offset, key: key, value: value,
                                   timestamp: timestamp, headers: Self.headers(of: message))
    }

    private static func headers(of message: UnsafeMutablePointer<rd_kafka_message_t>) -> [KafkaHeader] {
        var list: OpaquePointer?
        guard rd_kafka_message_headers(message, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return [] }
        var headers: [KafkaHeader] = []
        var index = 0
        var name: UnsafePointer<CChar>?
        var value: UnsafeRawPointer?
        var size = 0
        while rd_kafka_header_get_all(list, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
            let bytes = value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) }
            headers.append(KafkaHeader(key: name.map { String(cString: $0) } ?? "", value: bytes))
            index += 1
        }
        return headers
    }
}
