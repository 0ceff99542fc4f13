import CRdKafka
import Logging

/// A Kafka producer: `send` returns once the broker acknowledged the record.
///
/// Threads: `send` calls `rd_kafka_producev` (non-blocking) on the caller's task; a dedicated
/// poll thread serves delivery reports and resumes the waiting tasks. A full local queue
/// (`QUEUE_FULL`) is backpressure: `send` suspends until the poll thread has drained
/// delivery reports, then retries. It never surfaces as an error.
public final class KafkaProducer: Sendable {
    private let core: ProducerCore
    private let client: RdKafkaClient
    private let pollThread: PollThread
    private let shutdownFlushTimeout: Duration

    public init(configuration: KafkaProducerConfiguration, logger: Logger) throws(KafkaError) {
        var logger = logger
        logger[metadataKey: "kafka.client"] = configuration.clientID
        let core = ProducerCore(logger: logger)
        let client = try RdKafkaClient(type: RD_KAFKA_PRODUCER, properties: configuration.properties, context: core) { conf in
            rd_kafka_conf_set_dr_msg_cb(conf, producerDeliveryCallback)
            rd_kafka_conf_set_error_cb(conf, rdKafkaErrorCallback)
        }
        self.core = core
        self.client = client
        self.shutdownFlushTimeout = configuration.deliveryTimeout + .seconds(1)
        self.pollThread = PollThread(name: "kafka-producer-poll") { thread in
            while !thread.isStopRequested {
                rd_kafka_poll(client.pointer, 100)
                core.wakeBackpressureWaiters()
            }
            // Nothing may stay pending: purge what is left so every waiting send completes.
            rd_kafka_purge(client.pointer, crdkafka_purge_all_flags())
            var rounds = 0
            repeat {
                rd_kafka_poll(client.pointer, 50)
                rounds += 1
            } while rd_kafka_outq_len(client.pointer) > 0 && rounds < 100
            core.wakeBackpressureWaiters()
        }
        logger.debug("Kafka producer started", metadata: ["kafka.bootstrap": configuration.bootstrapServers])
    }

    deinit {
        pollThread.requestStop()
    }

    /// Produces one record and waits for the broker's acknowledgement.
    /// - Throws: `KafkaError` if the record could not be delivered (e.g. `.messageTimedOut` when
    ///   no broker acknowledged it within the delivery timeout, `.shutdown` after `shutdown()`).
    public func send(_ record: KafkaProducerRecord) async throws(KafkaError) -> KafkaDeliveryReport {
        let collector = DeliveryCollector(count: 1)
        await enqueue(record, index: 0, collector: collector)
        return try await collector.results()[0].get()
    }

    /// Produces all records, then waits for all acknowledgements. Results are in input order.
    public func send(_ records: [KafkaProducerRecord]) async -> [Result<KafkaDeliveryReport, KafkaError>] {
        guard !records.isEmpty else { return [] }
        let collector = DeliveryCollector(count: records.count)
        for (index, record) in records.enumerated() {
            await enqueue(record, index: index, collector: collector)
        }
        return await collector.results()
    }

    /// Waits until every queued record has been acknowledged or failed, or `timeout` elapsed.
    public func flush(timeout: Duration) async {
        let client = self.client
        let milliseconds = Int32(clamping: timeout.milliseconds)
        _ = await Blocking.run { rd_kafka_flush(client.pointer, milliseconds) }
    }

    /// Flushes (up to the delivery timeout), stops the poll thread and fails whatever is still
    /// queued with `.shutdown`. Further sends throw `.shutdown`. Safe to call more than once.
    public func shutdown() async {
        if core.beginShutdown() {
            while core.hasActiveCalls {
                try? await Task.sleep(for: .milliseconds(1))
            }
            await flush(timeout: shutdownFlushTimeout)
        }
        await pollThread.stop()
        core.logger.debug("Kafka producer shut down")
    }

    /// Hands one record to librdkafka, retrying on a full queue. Failures complete the slot.
    private func enqueue(_ record: KafkaProducerRecord, index: Int, collector: DeliveryCollector) async {
        let box = DeliveryBox(collector: collector, index: index, topic: record.topic)
        let opaque = Unmanaged.passRetained(box).toOpaque()
        while true {
            guard core.beginCall() else {
                Unmanaged<DeliveryBox>.fromOpaque(opaque).release()
                collector.complete(index, with: .failure(.shutdown("send to \(record.topic)")))
                return
            }
            let err = produce(record, opaque: opaque)
            core.endCall()
            switch err {
            case RD_KAFKA_RESP_ERR_NO_ERROR:
                return
            case RD_KAFKA_RESP_ERR__QUEUE_FULL:
                await core.waitForQueueSpace()
            default:
                Unmanaged<DeliveryBox>.fromOpaque(opaque).release()
                collector.complete(index, with: .failure(KafkaError(rdKafka: err, context: "produce to \(record.topic)")))
                return
            }
        }
    }

    private func produce(_ record: KafkaProducerRecord, opaque: UnsafeMutableRawPointer) -> rd_kafka_resp_err_t {
        let headers = Self.makeHeaders(record.headers)
        let err = record.topic.withCString { topic in
            record.value.withUnsafeBytes { value in
                withOptionalBytes(record.key) { key in
                    crdkafka_produce(client.pointer, topic, record.partition ?? -1, key.baseAddress, key.count,
                                     value.baseAddress, value.count, headers, opaque)
                }
            }
        }
        if err != RD_KAFKA_RESP_ERR_NO_ERROR, let headers { rd_kafka_headers_destroy(headers) }
        return err
    }

    private static func makeHeaders(_ headers: [KafkaHeader]) -> OpaquePointer? {
        guard !headers.isEmpty else { return nil }
        let list = rd_kafka_headers_new(headers.count)
        for header in headers {
            withOptionalBytes(header.value) { value in
                _ = rd_kafka_header_add(list, header.key, -1, value.baseAddress, value.count)
            }
        }
        return list
    }
}

/// Lends the bytes of an optional array (an empty buffer with a nil base address for `nil`).
func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    guard let bytes else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
    return bytes.withUnsafeBytes(body)
}
