import CRdKafka
import ServiceLogging
import Synchronization

/// Owns one `rd_kafka_t` handle and destroys it in `deinit`.
///
/// `@unchecked Sendable`: librdkafka documents `rd_kafka_t` as thread-safe for every call we
/// make on it; the pointer itself never changes and is destroyed exactly once: in `deinit`,
/// when no other reference (hence no other thread) can use it, or earlier by `destroy()`,
/// whose callers guarantee that nothing uses the handle afterwards.
package final class RdKafkaClient: @unchecked Sendable {
    package let pointer: OpaquePointer
    private let destroyed = Atomic<Bool>(false)
    /// The object whose unretained pointer is the handle's opaque; kept alive as long as the handle.
    private let context: (any AnyObject & Sendable)?

    /// Creates a handle from `properties`; `context` becomes the opaque that callbacks receive.
    /// `configure` may set callbacks on the `rd_kafka_conf_t` before the handle is created.
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

/// Logs librdkafka error events (served by the poll thread).
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
