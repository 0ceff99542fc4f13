import CRdKafka

/// An error from the Kafka wrapper: a stable `code`, a human-readable `message`, and the
/// librdkafka error code it came from, if any.
public struct KafkaError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What went wrong, as a stable, extensible set of codes.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// No broker could be reached (transport failure, all brokers down, no leader).
        public static let brokerUnavailable = Code("broker_unavailable")
        /// The message was not acknowledged within the delivery timeout.
        public static let messageTimedOut = Code("message_timed_out")
        /// A request (metadata, admin, offsets) did not complete in time.
        public static let timedOut = Code("timed_out")
        /// The client hit a fatal error (e.g. idempotence guarantees lost) and must be recreated.
        public static let fatal = Code("fatal")
        /// A configuration property was unknown or had an invalid value.
        public static let invalidConfiguration = Code("invalid_configuration")
        /// The topic or partition does not exist.
        public static let unknownTopic = Code("unknown_topic")
        /// The topic already exists (admin create).
        public static let topicAlreadyExists = Code("topic_already_exists")
        /// The message is larger than the broker or client allows.
        public static let messageTooLarge = Code("message_too_large")
        /// The client was shut down or closed; the operation was not (or no longer) performed.
        public static let shutdown = Code("shutdown")
        /// The rebalance listener failed to provide start offsets.
        public static let rebalanceFailed = Code("rebalance_failed")
        /// An argument was invalid.
        public static let invalidArgument = Code("invalid_argument")
        /// Any other broker or client error; see `rdKafkaCode` and `message`.
        public static let other = Code("kafka_error")
    }

    public var code: Code
    public var message: String
    /// The `rd_kafka_resp_err_t` value this error came from, if any.
    public var rdKafkaCode: Int32?
    /// Whether retrying the same operation later may succeed.
    public var isRetriable: Bool

    public var isFatal: Bool { code == .fatal }

    public init(code: Code, message: String, rdKafkaCode: Int32? = nil, isRetriable: Bool = false) {
        self.code = code
        self.message = message
        self.rdKafkaCode = rdKafkaCode
        self.isRetriable = isRetriable
    }

    public var description: String {
        var text = "KafkaError(\(code)): \(message)"
        if let rdKafkaCode { text += " [rd_kafka_resp_err \(rdKafkaCode)]" }
        return text
    }

    package static func shutdown(_ what: String) -> KafkaError {
        KafkaError(code: .shutdown, message: "\(what): the client was shut down")
    }

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
