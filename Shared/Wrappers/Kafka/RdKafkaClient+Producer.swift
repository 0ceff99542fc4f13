import CRdKafka

/// The producer's librdkafka calls: producing, serving delivery reports, flushing and purging.
extension RdKafkaClient {
    /// A producer handle whose delivery reports complete the `DeliveryCollector` slot each
    /// message carries as its opaque (inside `poll`), and whose error events are logged.
    static func makeProducer(properties: [(String, String)], core: ProducerCore) throws(KafkaError) -> RdKafkaClient {
        try RdKafkaClient(type: RD_KAFKA_PRODUCER, properties: properties, context: core) { conf in
            rd_kafka_conf_set_dr_msg_cb(conf, producerDeliveryCallback)
            rd_kafka_conf_set_error_cb(conf, rdKafkaErrorCallback)
        }
    }

    /// What `produce` did with a record.
    enum ProduceResult {
        /// librdkafka took the record (a copy); its delivery report will complete the opaque.
        case enqueued
        /// librdkafka's local queue is full (backpressure): the record was not taken.
        case queueFull
        /// The record was not taken and will not be by retrying at once.
        case failed(KafkaError)
    }

    /// Hands one record to librdkafka (`rd_kafka_producev`, non-blocking; key, value and
    /// headers are copied). `topic` is the record's topic as a C string (callers keep it
    /// between records of one topic); `opaque` comes back in the delivery report, and only
    /// after `.enqueued`: otherwise the caller still owns what it points to.
    func produce(_ record: KafkaProducerRecord, topic: UnsafePointer<CChar>, opaque: UnsafeMutableRawPointer) -> ProduceResult {
        let headers = Self.makeHeaders(record.headers)
        let err = record.value.withUnsafeBytes { value in
            withOptionalBytes(record.key) { key in
                crdkafka_produce(pointer, topic, record.partition ?? -1, key.baseAddress, key.count,
                                 value.baseAddress, value.count, headers, opaque)
            }
        }
        switch err {
        case RD_KAFKA_RESP_ERR_NO_ERROR:
            return .enqueued
        case RD_KAFKA_RESP_ERR__QUEUE_FULL:
            if let headers { rd_kafka_headers_destroy(headers) }
            return .queueFull
        default:
            if let headers { rd_kafka_headers_destroy(headers) }
            return .failed(KafkaError(rdKafka: err, context: "produce to \(record.topic)"))
        }
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

    /// Serves the handle's events (delivery reports, error events), waiting up to `timeout`
    /// for the first; returns how many were served. With a timeout it blocks: only the
    /// producer's poll thread waits, a sending task polls with `.zero`.
    @discardableResult
    func poll(timeout: Duration) -> Int {
        Int(rd_kafka_poll(pointer, timeout.rdKafkaMilliseconds))
    }

    /// Waits until every queued record has been delivered or failed, for at most `timeout`
    /// (blocking: called through `BlockingCall.run`). Throws `.timedOut` when records remain.
    func flush(timeout: Duration) throws(KafkaError) {
        let err = rd_kafka_flush(pointer, timeout.rdKafkaMilliseconds)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(rdKafka: err, context: "flush") }
    }

    /// Purges queued and in-flight records (blocking until their delivery reports, which fail
    /// with `.shutdown`, are enqueued; the next `poll` serves them). Its only errors are for a
    /// handle that is no producer or for unknown flags, neither of which can happen here.
    func purgeAll() {
        rd_kafka_purge(pointer, crdkafka_purge_all_flags())
    }
}

/// Lends the bytes of an optional array (an empty buffer with a nil base address for `nil`).
private func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    guard let bytes else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
    return bytes.withUnsafeBytes(body)
}

/// librdkafka's delivery report callback, called inside `poll` (on the poll thread, or on a
/// sending task that serves ready reports without blocking).
private func producerDeliveryCallback(_ rk: OpaquePointer?, _ message: UnsafePointer<rd_kafka_message_t>?, _ opaque: UnsafeMutableRawPointer?) {
    guard let message, let slot = message.pointee._private else { return }
    let report = message.pointee
    let error = report.err == RD_KAFKA_RESP_ERR_NO_ERROR
        ? nil
        : KafkaError(rdKafka: report.err, context: "delivery to \(String(cString: rd_kafka_topic_name(report.rkt)))")
    DeliveryCollector.complete(slot: slot, partition: report.partition, offset: report.offset, error: error)
}
