import Foundation
import Kafka
import Logging

/// A runtime failure of a `backbone` command (exit status 1): what went wrong, where, and
/// whether trying again later may help.
struct CommandError: Error, CustomStringConvertible {
    struct Code: RawRepresentable, Hashable, Sendable {
        let rawValue: String
        static let unknownTopic = Code(rawValue: "unknown_topic")
        static let unknownPartition = Code(rawValue: "unknown_partition")
        static let kafkaUnavailable = Code(rawValue: "kafka_unavailable")
        static let malformedInput = Code(rawValue: "malformed_input")
        static let deliveryFailed = Code(rawValue: "delivery_failed")
        static let serviceUnavailable = Code(rawValue: "service_unavailable")
        static let unexpectedResponse = Code(rawValue: "unexpected_response")
        static let timedOut = Code(rawValue: "timed_out")
        static let io = Code(rawValue: "io")
    }

    let code: Code
    let message: String
    /// Where it happened (a topic, a file and line, a URL), if that helps the operator.
    var context: String?
    var isRetriable: Bool = false

    var description: String { context.map { "\($0): \(message)" } ?? message }
}

/// Kafka settings shared by `topics`, `tail`, `dump` and `republish`.
struct KafkaSettings {
    let brokers: String
    /// For librdkafka's own log lines: quiet (errors only) unless `LOG_LEVEL` asks for more,
    /// so they do not drown the records on stdout/stderr.
    let logger: Logger

    static func resolve(logger: Logger) throws -> KafkaSettings {
        let values = DevEnvironment.resolved()
        guard let brokers = values["KAFKA_BROKERS"], !brokers.isEmpty else {
            throw CommandLineArguments.UsageError(description: "KAFKA_BROKERS is not set (export it, or start `backbone dev`)")
        }
        var kafkaLogger = logger
        if ProcessInfo.processInfo.environment["LOG_LEVEL"] == nil { kafkaLogger.logLevel = .critical }
        return KafkaSettings(brokers: brokers, logger: kafkaLogger)
    }

    func admin() throws -> KafkaAdmin {
        try KafkaAdmin(bootstrapServers: brokers, clientID: "backbone-cli", timeout: .seconds(10), logger: logger)
    }

    /// Every topic, or a clear error when the cluster cannot be reached.
    func listTopics(_ admin: KafkaAdmin) async throws -> [KafkaTopicMetadata] {
        do {
            return try await admin.listTopics()
        } catch {
            throw CommandError(code: .kafkaUnavailable, message: "cannot list topics: \(error.message)",
                               context: "Kafka at \(brokers)", isRetriable: true)
        }
    }

    /// Internal topics (`__consumer_offsets`, `__transaction_state`, …) start with `__`.
    static func isInternal(_ topic: String) -> Bool { topic.hasPrefix("__") }
}
