import Foundation
import JSON
import Synchronization

/// A structured logger that writes one JSON object per line.
///
/// Loggers are values: libraries take one as a parameter and add their own metadata
/// (`logger[metadataKey: "kafka.topic"] = "…"`) without affecting the caller's copy.
/// Metadata keys are namespaced (`kafka.topic`, `http.path`, `pg.table`).
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CustomStringConvertible {
        case trace, debug, info, notice, warning, error, critical

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        public var description: String {
            switch self {
            case .trace: "trace"
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            case .critical: "critical"
            }
        }

        public init?(name: String) {
            switch name.lowercased() {
            case "trace": self = .trace
            case "debug": self = .debug
            case "info": self = .info
            case "notice": self = .notice
            case "warning", "warn": self = .warning
            case "error": self = .error
            case "critical": self = .critical
            default: return nil
            }
        }
    }

    public let label: String
    public var logLevel: Level
    public var metadata: [String: String]
    private let sink: LogSink

    public init(label: String, level: Level = .info, sink: LogSink = .standardError) {
        self.label = label
        self.logLevel = level
        self.metadata = [:]
        self.sink = sink
    }

    /// A logger that discards everything (for tests and benchmarks).
    public static var disabled: Logger { Logger(label: "disabled", level: .critical, sink: .discard) }

    public subscript(metadataKey key: String) -> String? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(_ level: Level, _ message: @autoclosure () -> String, metadata extra: [String: String] = [:]) {
        guard level >= logLevel else { return }
        var object: [String: String] = metadata
        // A line written for the work of a sampled trace names it (`TraceContext.current`).
        if let trace = TraceContext.current, trace.sampled { object["trace_id"] = trace.traceID }
        for (key, value) in extra { object[key] = value }
        object["ts"] = Logger.timestamp()
        object["level"] = level.description
        object["logger"] = label
        object["msg"] = message()
        sink.emit(object)
    }

    public func trace(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) { log(.trace, message(), metadata: metadata) }
    public func debug(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) { log(.debug, message(), metadata: metadata) }
    public func info(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) { log(.info, message(), metadata: metadata) }
    public func notice(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) { log(.notice, message(), metadata: metadata) }
    public func warning(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) { log(.warning, message(), metadata: metadata) }
    public func error(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) { log(.error, message(), metadata: metadata) }
    public func critical(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) { log(.critical, message(), metadata: metadata) }

    private static func timestamp() -> String {
        Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true))
    }
}

/// Where log lines go. Writes are serialised so lines never interleave.
public final class LogSink: Sendable {
    private enum Target: Sendable {
        case fileDescriptor(Int32)
        case discard
        case memory
    }

    private let target: Target
    private let lock = Mutex<[String]>([])

    private init(target: Target) { self.target = target }

    public static let standardError = LogSink(target: .fileDescriptor(2))
    public static let standardOutput = LogSink(target: .fileDescriptor(1))
    public static let discard = LogSink(target: .discard)

    /// A sink that keeps lines in memory, for tests that assert on logging.
    public static func inMemory() -> LogSink { LogSink(target: .memory) }

    /// Lines written to an in-memory sink.
    public var lines: [String] { lock.withLock { $0 } }

    func emit(_ object: [String: String]) {
        if case .discard = target { return }
        let line = Self.encode(object)
        lock.withLock { buffer in
            switch target {
            case .discard:
                break
            case .memory:
                buffer.append(line)
            case .fileDescriptor(let fd):
                var bytes = Array(line.utf8)
                bytes.append(0x0A)
                var offset = 0
                while offset < bytes.count {
                    let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                    if written <= 0 { break }
                    offset += written
                }
            }
        }
    }

    /// Encodes with sorted keys, `ts`/`level`/`msg` first, so lines are stable and greppable.
    static func encode(_ object: [String: String]) -> String {
        let leading = ["ts", "level", "logger", "msg"]
        var parts: [String] = []
        for key in leading { if let value = object[key] { parts.append("\(JSONString.quote(key)):\(JSONString.quote(value))") } }
        for key in object.keys.sorted() where !leading.contains(key) {
            parts.append("\(JSONString.quote(key)):\(JSONString.quote(object[key]!))")
        }
        return "{" + parts.joined(separator: ",") + "}"
    }
}
