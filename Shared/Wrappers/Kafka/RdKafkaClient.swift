import CRdKafka
import Lifecycle
import ServiceLogging
import Synchronization

/// Owns one `rd_kafka_t` handle and destroys it in `deinit`; every librdkafka call of the
/// module goes through it (its methods, in this file and its `+Consumer`, `+Producer` and
/// `+Admin` extensions), so `KafkaConsumer`, `KafkaProducer` and `KafkaAdmin` see Swift values
/// and `KafkaError`s only, and what a C call needs (lists to build and destroy, error objects
/// to free, buffers to copy) is written once, next to the call.
///
/// The methods do not choose threads: blocking ones (`consumerPoll`, `poll`, `flush`, the
/// admin queries, `consumerClose`) are called from a `PollThread` or through `BlockingCall.run`
/// by their callers, as each method's documentation says.
///
/// `@unchecked Sendable`: librdkafka documents `rd_kafka_t` as thread-safe for every call we
/// make on it; the pointer itself never changes and is destroyed exactly once: in `deinit`,
/// when no other reference (hence no other thread) can use it, or earlier by `destroy()`,
/// whose callers guarantee that nothing uses the handle afterwards.
package final class RdKafkaClient: @unchecked Sendable {
    /// The handle, for C calls outside this module (the embedded mock cluster of
    /// `DevInfrastructure` is started on one); this module calls the methods instead.
    package let pointer: OpaquePointer
    private let destroyed = Atomic<Bool>(false)
    /// The object whose unretained pointer is the handle's opaque; kept alive as long as the handle.
    private let context: (any AnyObject & Sendable)?

    /// Creates a handle from `properties`; `context` becomes the opaque that callbacks receive.
    /// `configure` may set callbacks on the `rd_kafka_conf_t` before the handle is created
    /// (the module's own clients are made by `makeConsumer`, `makeProducer` and `makeAdmin`).
    package init(type: rd_kafka_type_t, properties: [(String, String)], context: (any AnyObject & Sendable)?,
         configure: (OpaquePointer) -> Void = { _ in }) throws(KafkaError) {
        let conf = try Self.makeConf(properties)
        if let context {
            rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(context).toOpaque())
        }
        rd_kafka_conf_set_log_cb(conf, rdKafkaLogCallback)
        configure(conf)
        var errstr = [CChar](repeating: 0, count: 512)
        guard let handle = rd_kafka_new(type, conf, &errstr, errstr.count) else {
            rd_kafka_conf_destroy(conf)
            throw KafkaError(code: .invalidConfiguration, message: String(cBuffer: errstr))
        }
        self.pointer = handle
        self.context = context
    }

    deinit {
        destroy()
    }

    /// Destroys the handle now (once). The caller guarantees no thread uses it afterwards.
    func destroy() {
        guard !destroyed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        rd_kafka_destroy(pointer)
    }

    /// Builds a configuration, reporting every rejected property in one error.
    static func makeConf(_ properties: [(String, String)]) throws(KafkaError) -> OpaquePointer {
        let conf = rd_kafka_conf_new()!
        var problems: [String] = []
        var errstr = [CChar](repeating: 0, count: 512)
        for (key, value) in properties where rd_kafka_conf_set(conf, key, value, &errstr, errstr.count) != RD_KAFKA_CONF_OK {
            problems.append("\(key): \(String(cBuffer: errstr))")
        }
        guard problems.isEmpty else {
            rd_kafka_conf_destroy(conf)
            throw KafkaError(code: .invalidConfiguration, message: problems.joined(separator: "; "))
        }
        return conf
    }

    /// The client's fatal error, if one was raised.
    var fatalError: KafkaError? {
        var errstr = [CChar](repeating: 0, count: 512)
        let err = rd_kafka_fatal_error(pointer, &errstr, errstr.count)
        guard err != RD_KAFKA_RESP_ERR_NO_ERROR else { return nil }
        return KafkaError(code: .fatal, message: String(cBuffer: errstr), rdKafkaCode: err.rawValue)
    }

    /// The logical offset "earliest" (`RD_KAFKA_OFFSET_BEGINNING`, a macro Swift cannot import):
    /// where a partition starts when no offset was chosen for it.
    static var offsetBeginning: Int64 { crdkafka_offset_beginning() }

    /// A new partition list holding `entries` in order, each with its offset; the caller
    /// destroys it (`rd_kafka_topic_partition_list_destroy`).
    static func makePartitionList(_ entries: [(KafkaTopicPartition, Int64)]) -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t> {
        let list = rd_kafka_topic_partition_list_new(Int32(entries.count))!
        for (partition, offset) in entries {
            rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition).pointee.offset = offset
        }
        return list
    }
}

extension Duration {
    /// The timeout argument of a librdkafka call: whole milliseconds, clamped to `Int32`.
    var rdKafkaMilliseconds: Int32 { Int32(clamping: wholeMilliseconds) }
}

/// Something that receives librdkafka's log lines and error events (the handle's opaque).
package protocol RdKafkaCallbackContext: AnyObject, Sendable {
    var logger: Logger { get }
}

/// Routes librdkafka's own log lines (syslog levels) to the context's logger.
private func rdKafkaLogCallback(_ rk: OpaquePointer?, _ level: Int32, _ facility: UnsafePointer<CChar>?,
                                _ message: UnsafePointer<CChar>?) {
    guard let rk, let opaque = rd_kafka_opaque(rk) else { return }
    let object = Unmanaged<AnyObject>.fromOpaque(opaque).takeUnretainedValue()
    guard let context = object as? any RdKafkaCallbackContext else { return }
    let text = message.map { String(cString: $0) } ?? ""
    let metadata = ["kafka.facility": facility.map { String(cString: $0) } ?? "", "kafka.client": String(cString: rd_kafka_name(rk))]
    switch level {
    case ...2: context.logger.error(text, metadata: metadata)
    case 3, 4: context.logger.warning(text, metadata: metadata)  // LOG_ERR is used for transient connection failures
    case 5: context.logger.notice(text, metadata: metadata)
    case 6: context.logger.info(text, metadata: metadata)
    default: context.logger.debug(text, metadata: metadata)
    }
}

/// Logs librdkafka error events (served by the poll thread). Registered by the consumer's and
/// the producer's configuration (`makeConsumer`, `makeProducer`).
func rdKafkaErrorCallback(_ rk: OpaquePointer?, _ err: Int32, _ reason: UnsafePointer<CChar>?, _ opaque: UnsafeMutableRawPointer?) {
    guard let opaque else { return }
    let object = Unmanaged<AnyObject>.fromOpaque(opaque).takeUnretainedValue()
    guard let context = object as? any RdKafkaCallbackContext else { return }
    let code = rd_kafka_resp_err_t(rawValue: err)
    let text = reason.map { String(cString: $0) } ?? String(cString: rd_kafka_err2str(code))
    let metadata = ["kafka.error": String(cString: rd_kafka_err2name(code))]
    if code == RD_KAFKA_RESP_ERR__FATAL {
        context.logger.critical("fatal Kafka client error: \(text)", metadata: metadata)
    } else {
        context.logger.warning("Kafka client error: \(text)", metadata: metadata)
    }
}

extension String {
    /// Decodes a NUL-terminated C error buffer.
    init(cBuffer buffer: [CChar]) {
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        self.init(decoding: bytes, as: UTF8.self)
    }
}

// MARK: - librdkafka's error codes as KafkaError

extension KafkaError {
    /// Maps a librdkafka response error, with an optional context prefix.
    package init(rdKafka err: rd_kafka_resp_err_t, context: String? = nil, detail: String? = nil) {
        let text = detail ?? String(cString: rd_kafka_err2str(err))
        let message = context.map { "\($0): \(text)" } ?? text
        let (code, retriable) = Self.classify(err)
        self.init(code: code, message: message, rdKafkaCode: err.rawValue, isRetriable: retriable)
    }

    private static func classify(_ err: rd_kafka_resp_err_t) -> (Code, Bool) {
        switch err {
        case RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE,
             RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
             RD_KAFKA_RESP_ERR__RESOLVE, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
             RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND, RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION:
            return (.brokerUnavailable, true)
        case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
            return (.messageTimedOut, true)
        case RD_KAFKA_RESP_ERR__TIMED_OUT, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE:
            return (.timedOut, true)
        case RD_KAFKA_RESP_ERR__FATAL:
            return (.fatal, false)
        case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
            return (.unknownTopic, false)
        case RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS:
            return (.topicAlreadyExists, false)
        case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
            return (.messageTooLarge, false)
        case RD_KAFKA_RESP_ERR__PURGE_QUEUE, RD_KAFKA_RESP_ERR__PURGE_INFLIGHT, RD_KAFKA_RESP_ERR__DESTROY:
            return (.shutdown, false)
        case RD_KAFKA_RESP_ERR__INVALID_ARG, RD_KAFKA_RESP_ERR_INVALID_PARTITIONS,
             RD_KAFKA_RESP_ERR_INVALID_REPLICATION_FACTOR, RD_KAFKA_RESP_ERR_INVALID_CONFIG:
            return (.invalidArgument, false)
        case RD_KAFKA_RESP_ERR__QUEUE_FULL:
            return (.other, true)
        default:
            return (.other, rd_kafka_err2name(err) != nil && Self.retriableByName(err))
        }
    }

    /// Broker errors Kafka marks retriable that are not classified above.
    private static func retriableByName(_ err: rd_kafka_resp_err_t) -> Bool {
        switch err {
        case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS, RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE,
             RD_KAFKA_RESP_ERR_NOT_COORDINATOR, RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR,
             RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS, RD_KAFKA_RESP_ERR__WAIT_COORD:
            return true
        default:
            return false
        }
    }
}
