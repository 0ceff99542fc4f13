import Foundation
import Kafka
import ServiceLogging
import ServiceRuntime

/// Kafka settings shared by `topics`, `tail`, `dump` and `republish`.
struct KafkaSettings {
    let brokers: String
    /// For librdkafka's own log lines: quiet (errors only) unless `LOG_LEVEL` asks for more,
    /// so they do not drown the records on stdout/stderr.
    let logger: Logger
    /// The librdkafka properties of the command's consumers: `KAFKA_FETCH_WAIT_MS` (from
    /// `backbone dev`'s dev.env against its broker) if set.
    var consumerProperties: [String: String] = [:]

    static func resolve(logger: Logger) throws -> KafkaSettings {
        let values = DevEnvironment.resolved()
        guard let brokers = values["KAFKA_BROKERS"], !brokers.isEmpty else {
            throw CommandLineArguments.UsageError(description: "KAFKA_BROKERS is not set (export it, or start `backbone dev`)")
        }
        var kafkaLogger = logger
        if ProcessInfo.processInfo.environment["LOG_LEVEL"] == nil { kafkaLogger.logLevel = .critical }
        var settings = KafkaSettings(brokers: brokers, logger: kafkaLogger)
        if let wait = values["KAFKA_FETCH_WAIT_MS"].flatMap(Int.init), (0...300_000).contains(wait) {
            settings.consumerProperties = CommonConfiguration.consumerProperties(fetchWait: .milliseconds(wait))
        }
        return settings
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
