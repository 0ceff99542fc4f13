import Foundation
import ServiceLogging

/// Every missing or invalid configuration key, reported at once.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var problems: [String]
    public var description: String {
        "invalid configuration:\n" + problems.map { "  - \($0)" }.joined(separator: "\n")
    }
}

/// Reads typed values from environment variables, collecting every problem instead of
/// stopping at the first; call `validate()` once all keys are read.
///
///     var env = EnvironmentReader()
///     let port = env.int("HTTP_PORT", default: 8080, range: 1...65535)
///     let brokers = env.string("KAFKA_BROKERS")
///     try env.validate()
public struct EnvironmentReader: Sendable {
    public let environment: [String: String]
    public private(set) var problems: [String] = []

    public init(_ environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    private func raw(_ key: String) -> String? {
        guard let value = environment[key]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        return value
    }

    /// A required string; a missing key is recorded and `""` returned.
    public mutating func string(_ key: String) -> String {
        guard let value = raw(key) else {
            problems.append("\(key) is required")
            return ""
        }
        return value
    }

    public func string(_ key: String, default fallback: String) -> String { raw(key) ?? fallback }

    public func optionalString(_ key: String) -> String? { raw(key) }

    public mutating func int(_ key: String, default fallback: Int, range: ClosedRange<Int>? = nil) -> Int {
        number(key, default: fallback, range: range, kind: "an integer")
    }

    public mutating func double(_ key: String, default fallback: Double, range: ClosedRange<Double>? = nil) -> Double {
        number(key, default: fallback, range: range, kind: "a number")
    }

    /// A number parsed from its text, within `range` when given; `kind` names what a bad value
    /// should have been.
    private mutating func number<T: LosslessStringConvertible & Comparable>(_ key: String, default fallback: T,
                                                                            range: ClosedRange<T>?, kind: String) -> T {
        guard let text = raw(key) else { return fallback }
        guard let value = T(text) else {
            problems.append("\(key) must be \(kind) (got \"\(text)\")")
            return fallback
        }
        if let range, !range.contains(value) {
            problems.append("\(key) must be within \(range.lowerBound)…\(range.upperBound) (got \(value))")
            return fallback
        }
        return value
    }

    /// A comma-separated list, each item trimmed and empty ones dropped; nil when the key is
    /// unset (an empty list when it holds only commas).
    public func list(_ key: String) -> [String]? {
        raw(key).map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
    }

    public mutating func bool(_ key: String, default fallback: Bool) -> Bool {
        guard let text = raw(key)?.lowercased() else { return fallback }
        switch text {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default:
            problems.append("\(key) must be true or false (got \"\(text)\")")
            return fallback
        }
    }

    /// Milliseconds as a `Duration`.
    public mutating func milliseconds(_ key: String, default fallback: Duration,
                                      range: ClosedRange<Int> = 0...Int(Int32.max)) -> Duration {
        guard raw(key) != nil else { return fallback }
        return .milliseconds(int(key, default: 0, range: range))
    }

    /// Milliseconds as a `Duration`, or nil when `key` is not set.
    public mutating func optionalMilliseconds(_ key: String, range: ClosedRange<Int> = 0...Int(Int32.max)) -> Duration? {
        guard raw(key) != nil else { return nil }
        return milliseconds(key, default: .zero, range: range)
    }

    /// How often a background loop (an outbox relay, a sweep, a job poll) runs: at least 10 ms,
    /// so that a 0 cannot turn it into a busy loop against the database.
    public mutating func loopInterval(_ key: String, default fallback: Duration) -> Duration {
        milliseconds(key, default: fallback, range: 10...Int(Int32.max))
    }

    /// `KAFKA_SESSION_TIMEOUT_MS`: within what a Kafka broker accepts by default
    /// (`group.min.session.timeout.ms` 6,000 … `group.max.session.timeout.ms` 1,800,000); a
    /// value outside is refused by the broker and would leave the consumer restarting for ever.
    public mutating func kafkaSessionTimeout(default fallback: Duration) -> Duration {
        milliseconds("KAFKA_SESSION_TIMEOUT_MS", default: fallback, range: 6_000...1_800_000)
    }

    public mutating func logLevel(_ key: String = "LOG_LEVEL", default fallback: Logger.Level = .info) -> Logger.Level {
        guard let text = raw(key) else { return fallback }
        guard let level = Logger.Level(name: text) else {
            problems.append("\(key) must be one of trace, debug, info, notice, warning, error, critical (got \"\(text)\")")
            return fallback
        }
        return level
    }

    /// One of a fixed set of values, by name; another value is recorded and `fallback` returned.
    public mutating func choice<T: RawRepresentable & CaseIterable>(_ key: String, default fallback: T) -> T where T.RawValue == String {
        guard let text = raw(key) else { return fallback }
        guard let value = T(rawValue: text) else {
            problems.append("\(key) must be one of \(T.allCases.map(\.rawValue).joined(separator: ", ")) (got \"\(text)\")")
            return fallback
        }
        return value
    }

    /// Records a problem found by the caller's own checks.
    public mutating func fail(_ problem: String) { problems.append(problem) }

    public func validate() throws(ConfigurationError) {
        if !problems.isEmpty { throw ConfigurationError(problems: problems) }
    }
}
