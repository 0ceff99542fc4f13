import BlockingCalls
import ServiceLogging
import Synchronization

/// A Kafka producer: `send` returns once the broker acknowledged the record.
///
/// Threads: `send` calls `RdKafkaClient.produce` (non-blocking) on the caller's task; a dedicated
/// poll thread serves delivery reports and resumes the waiting tasks. A full local queue
/// (`QUEUE_FULL`) is backpressure: `send` suspends until the poll thread has drained
/// delivery reports, then retries. It never surfaces as an error.
public final class KafkaProducer: KafkaRecordSender {
    private let core: ProducerCore
    private let client: RdKafkaClient
    private let pollThread: PollThread
    private let shutdownFlushTimeout: Duration

    public init(configuration: KafkaProducerConfiguration, logger: Logger) throws(KafkaError) {
        var logger = logger
        logger[metadataKey: "kafka.client"] = configuration.clientID
        let core = ProducerCore(logger: logger)
        let client = try RdKafkaClient.makeProducer(properties: configuration.properties, core: core)
        self.core = core
        self.client = client
        self.shutdownFlushTimeout = configuration.deliveryTimeout + .seconds(1)
        self.pollThread = PollThread(name: "kafka-producer-poll") { thread in
            while !thread.isStopRequested {
                client.poll(timeout: .milliseconds(100))
                core.wakeBackpressureWaiters()
            }
            // Nothing may stay pending: purge what is left (a blocking purge enqueues the purged
            // messages' delivery reports before it returns), then serve those reports.
            client.purgeAll()
            var rounds = 0
            while client.poll(timeout: rounds == 0 ? .milliseconds(50) : .zero) > 0 || rounds == 0 {
                rounds += 1
            }
            core.wakeBackpressureWaiters()
        }
        logger.debug("Kafka producer started", metadata: ["kafka.bootstrap": configuration.bootstrapServers])
    }

    deinit {
        pollThread.requestStop()
    }

    /// Produces all records, then waits for all acknowledgements. Results are in input order.
    /// A record without a `traceparent` header gets the trace of the task's work
    /// (`TraceContext.current`: the HTTP request, the job), so the trace goes on with it.
    public func send(_ records: [KafkaProducerRecord]) async -> [Result<KafkaDeliveryReport, KafkaError>] {
        guard !records.isEmpty else { return [] }
        let records = TraceContext.current.map { trace in records.map { $0.carrying(trace) } } ?? records
        let collector = DeliveryCollector(records: records)
        await enqueue(collector)
        return await collector.results()
    }

    /// How often a send waited for space in librdkafka's queue (backpressure events).
    public var backpressureWaits: Int { core.backpressureWaits.load(ordering: .relaxed) }

    /// Waits until every queued record has been acknowledged or failed, or `timeout` elapsed.
    /// Returns at once after `shutdown()`.
    public func flush(timeout: Duration) async {
        guard core.beginCall() else { return }
        await flushHandle(timeout: timeout)
        core.endCall()
    }

    /// Flushes off the task threads. A flush that timed out is not an error here: `flush`
    /// returns either way, and `shutdown` purges what is left.
    private func flushHandle(timeout: Duration) async {
        let client = self.client
        _ = try? await BlockingCall.run("kafka.flush") { () throws(KafkaError) in try client.flush(timeout: timeout) }
    }

    /// Flushes (up to the delivery timeout + 1 s), stops the poll thread, fails whatever is
    /// still queued with `.shutdown` and destroys the librdkafka handle. Sends during or after
    /// it throw `.shutdown`. Safe to call more than once (later calls wait for the first).
    public func shutdown() async {
        guard core.beginShutdown() else {
            await core.waitUntilShutDown()
            return
        }
        await core.waitForCallsToEnd()
        await flushHandle(timeout: shutdownFlushTimeout)
        await pollThread.stop()
        client.destroy()
        core.finishShutdown()
        core.logger.debug("Kafka producer shut down")
    }

    /// Hands the records to librdkafka in order, suspending while the local queue is full.
    /// Every record's slot in `collector` is completed exactly once (by the delivery report,
    /// or here when producing fails).
    private func enqueue(_ collector: DeliveryCollector) async {
        let records = collector.records
        var next = records.startIndex
        var topicName = TopicNameCache()
        while next < records.endIndex {
            guard core.beginCall() else {
                for index in next..<records.endIndex {
                    collector.complete(index, error: .shutdown("send to \(records[index].topic)"))
                }
                return
            }
            var queueFull = false
            producing: while next < records.endIndex {
                let record = records[next]
                let opaque = collector.retainedSlot(for: next)
                switch topicName.withCString(record.topic, { client.produce(record, topic: $0, opaque: opaque) }) {
                case .enqueued:
                    next += 1
                    // Serve ready delivery reports here too (non-blocking), as librdkafka's own
                    // produce loops do: it keeps allocation and release on one thread.
                    client.poll(timeout: .zero)
                case .queueFull:
                    collector.releaseSlot(next)
                    if client.poll(timeout: .zero) > 0 { continue }
                    queueFull = true
                    break producing
                case .failed(let error):
                    collector.releaseSlot(next)
                    collector.complete(next, error: error)
                    next += 1
                }
            }
            core.endCall()
            if queueFull { await core.waitForQueueSpace() }
        }
    }
}

/// Keeps the C string of the last topic produced to, since batches usually share one topic.
private struct TopicNameCache {
    private var topic = ""
    private var cString: [CChar] = [0]

    mutating func withCString<R>(_ name: String, _ body: (UnsafePointer<CChar>) -> R) -> R {
        if name != topic {
            topic = name
            cString = Array(name.utf8CString)
        }
        return cString.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
