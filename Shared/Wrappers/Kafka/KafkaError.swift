/// An error from the Kafka wrapper: a stable `code`, a human-readable `message`, and the
/// librdkafka error code it came from, if any. The mapping of librdkafka's codes
/// (`init(rdKafka:context:detail:)`) is next to the C calls, in `RdKafkaClient.swift`.
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
}
