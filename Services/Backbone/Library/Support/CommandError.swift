import Foundation

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
        static let unknownGroup = Code(rawValue: "unknown_group")
        static let databaseUnavailable = Code(rawValue: "database_unavailable")
        static let offsetOutOfRange = Code(rawValue: "offset_out_of_range")
        static let alreadyRunning = Code(rawValue: "already_running")
    }

    let code: Code
    let message: String
    /// Where it happened (a topic, a file and line, a URL), if that helps the operator.
    var context: String?
    var isRetriable: Bool = false

    var description: String { context.map { "\($0): \(message)" } ?? message }
}
