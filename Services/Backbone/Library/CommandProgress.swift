import Foundation
import Logging

/// Progress and results of a long command, for a person or for a script.
///
/// On a terminal: one status line redrawn in place (records done and total, rate, time left)
/// and plain sentences. Otherwise: JSON lines on standard output, one per progress report
/// (at most one per `interval`) and one per result, so the command scripts well.
/// Used by one task at a time (the command's), so it needs no lock.
final class CommandProgress {
    /// A JSON value of a line's field (numbers and strings are all the commands need).
    enum Field {
        case string(String)
        case int(Int)
        case double(Double)
        case bool(Bool)
        /// Already-encoded JSON (an object or array built elsewhere).
        case json(String)

        var encoded: String {
            switch self {
            case .string(let text): JSONString.quote(text)
            case .int(let value): String(value)
            case .double(let value): value.isFinite ? String(format: "%.1f", value) : "null"
            case .bool(let value): value ? "true" : "false"
            case .json(let text): text
            }
        }
    }

    let isTerminal: Bool
    private let command: String
    private let interval: Duration
    private let writer = LineWriter()
    private var lastReport: ContinuousClock.Instant?
    private var statusShown = false
    /// (time, done) samples of the last few seconds, for the rate.
    private var samples: [(ContinuousClock.Instant, Int)] = []

    init(command: String, isTerminal: Bool = isatty(STDOUT_FILENO) == 1, interval: Duration? = nil) {
        self.command = command
        self.isTerminal = isTerminal
        self.interval = interval ?? (isTerminal ? .milliseconds(200) : .seconds(1))
    }

    /// Reports `done` of `total` records in `phase`; drawn at most once per interval unless `force`.
    func update(phase: String, done: Int, total: Int, force: Bool = false) {
        let now = ContinuousClock.now
        samples.append((now, done))
        // Samples of the last 5 s, and at least two.
        let keepFrom = min(samples.firstIndex { now - $0.0 <= .seconds(5) } ?? samples.count, max(0, samples.count - 2))
        samples.removeFirst(keepFrom)
        if !force, let lastReport, now - lastReport < interval { return }
        lastReport = now
        let rate = self.rate
        let remaining = max(0, total - done)
        let eta = rate > 0 ? Double(remaining) / rate : nil
        if isTerminal {
            let percent = total > 0 ? Double(done) * 100 / Double(total) : 100
            let left = eta.map { Self.duration($0) } ?? "–"
            let text = "\(phase): \(done)/\(total) records (\(String(format: "%.0f", percent)) %), "
                + "\(String(format: "%.0f", rate)) records/s, \(left) left"
            writer.write("\r\u{1B}[K" + text)
            statusShown = true
        } else {
            var fields: [(String, Field)] = [("phase", .string(phase)), ("done", .int(done)), ("total", .int(total)),
                                             ("rate", .double(rate))]
            if let eta { fields.append(("etaSeconds", .double(eta))) }
            line("progress", fields)
            return
        }
        writer.flush()
    }

    /// Records per second over the last few seconds.
    var rate: Double {
        guard let first = samples.first, let last = samples.last, last.0 > first.0 else { return 0 }
        return Double(last.1 - first.1) / CommandLoop.seconds(last.0 - first.0)
    }

    /// A result: a sentence on a terminal, a JSON line `{"command","event",…fields}` otherwise.
    func report(_ event: String, _ fields: [(String, Field)], text: @autoclosure () -> String) {
        if isTerminal {
            endStatus()
            writer.write(text() + "\n")
            writer.flush()
        } else {
            line(event, fields)
        }
    }

    /// Clears the status line so that ordinary output starts on a fresh line.
    func endStatus() {
        guard statusShown else { return }
        writer.write("\n")
        writer.flush()
        statusShown = false
    }

    private func line(_ event: String, _ fields: [(String, Field)]) {
        let members = [("command", Field.string(command)), ("event", Field.string(event))] + fields
        writer.write(line: Array(("{" + members.map { "\(JSONString.quote($0.0)):\($0.1.encoded)" }.joined(separator: ",") + "}").utf8))
        writer.flush()
    }

    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        if total >= 3600 { return "\(total / 3600) h \(total % 3600 / 60) min" }
        if total >= 60 { return "\(total / 60) min \(total % 60) s" }
        return "\(total) s"
    }
}

/// Small helpers of the long-running commands.
enum CommandLoop {
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
