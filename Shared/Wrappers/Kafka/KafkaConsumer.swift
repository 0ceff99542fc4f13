import Foundation
import ServiceLogging
import Synchronization

/// A consumer-group member. Offsets are not committed to Kafka: the
/// `KafkaRebalanceListener` supplies each assigned partition's start offset (the caller keeps
/// its positions elsewhere, e.g. in Postgres, in the same transaction as its work).
///
/// Threads: a dedicated poll thread calls `RdKafkaClient.consumerPoll`, runs rebalances (blocking
/// itself while the async listener runs) and fills a bounded buffer; `nextBatch` and `records`
/// take from that buffer. When the buffer is full the poll thread stops polling until it has
/// drained to half.
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
        let client = try RdKafkaClient.makeConsumer(properties: configuration.properties, core: core)
        if let assignment = configuration.assignment {
            let starts = assignment.mapValues { $0 < 0 ? RdKafkaClient.offsetBeginning : $0 }
            core.assigned(starts)
            try client.assign(starts)
        } else {
            try client.subscribe(topics: configuration.topics)
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
            guard let marks = try? client.cachedWatermarks(of: partition), marks.high >= 0 else { continue }
            let start = position >= 0 ? position : max(marks.low, 0)
            lags[partition] = max(0, marks.high - start)
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
            for seek in core.takePendingSeeks() {
                seek.continuation.resume(returning: Result { () throws(KafkaError) in try performSeek(seek.offsets) })
            }
            // Backpressure: while our buffer is full, stop polling. librdkafka keeps prefetching
            // into its own bounded queue (`queued.max.messages.kbytes`) and then stops fetching;
            // positions never move. (Pausing partitions instead purges that queue, and every
            // pause/resume cycle refetches it.)
            if core.backpressureAction().paused {
                usleep(5_000)
                continue
            }
            var timeout = Duration.milliseconds(100)
            while batch.count < maxBatch, let polled = client.consumerPoll(timeout: timeout) {
                timeout = .zero
                // A rebalance may have run inside this poll: the message belongs to the new generation.
                let generation = core.generation
                if generation != batchGeneration {
                    core.append(batch, generation: batchGeneration)
                    batch = []
                    batchGeneration = generation
                }
                switch polled {
                case .record(let record): batch.append(record)
                case .partitionEnd: break
                case .failure(let error): report(error)
                }
            }
            core.append(batch, generation: batchGeneration)
            batch = []
            batchGeneration = core.generation
        }
        do {
            try client.consumerClose()
        } catch {
            core.logger.warning("Kafka consumer close: \(error.message)")
        }
        core.closed()
        core.logger.debug("Kafka consumer closed")
    }

    /// Logs a consumer error; a fatal one fails the consumer (its owner replaces it).
    private func report(_ error: KafkaError) {
        if error.isFatal {
            core.fail(client.fatalError ?? error)
        }
        core.logger.warning("Kafka consumer error: \(error.message)", metadata: ["kafka.error": error.code.rawValue])
    }
}
