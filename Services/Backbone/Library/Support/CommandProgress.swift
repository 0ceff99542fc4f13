import Foundation
import JSON
import Lifecycle
import ServiceLogging

/// Progress and results of a long command, for a person or for a script.
///
/// Progress (records done and total, rate over the last seconds, time left) goes to standard
/// error: on a terminal one status line redrawn in place, otherwise a JSON line at most once a
/// second (`{"command":"dlq replay","event":"progress","phase":"replaying","done":120,
/// "total":500,"rate":340.2,"etaSeconds":1.1}`), so standard output carries only results.
/// Results (`report`) are plain sentences on a terminal and JSON lines
/// `{"command","event",…fields}` otherwise. Quick runs stay quiet: nothing is drawn during the
/// first second unless forced. Used by one task at a time (the command's), so it needs no lock.
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
    /// The total of `advance(by:)`'s counting (nil when not known).
    var total: Int?
    private(set) var done = 0
    private let command: String
    private let interval: Duration
    private let started = ContinuousClock.now
    private let results = LineWriter()
    private let status = LineWriter(handle: .standardError)
    private var lastReport: ContinuousClock.Instant?
    private var statusShown = false
    /// (time, done) samples of the last few seconds, for the rate.
    private var samples: [(ContinuousClock.Instant, Int)] = []

    init(command: String, total: Int? = nil, isTerminal: Bool = CommandOutput.isTerminal, interval: Duration? = nil) {
        self.command = command
        self.total = total
        self.isTerminal = isTerminal
        self.interval = interval ?? (isTerminal ? .milliseconds(200) : .seconds(1))
    }

    /// Counts `count` more records done (of `total`) and reports them now and then.
    func advance(by count: Int = 1) {
        done += count
        update(phase: command, done: done, total: total)
    }

    /// The last count (if any report was shown), then the status line is closed.
    func finish() {
        if lastReport != nil { update(phase: command, done: done, total: total, force: true) }
        endStatus()
    }

    /// Reports `done` of `total` records in `phase`; drawn at most once per interval, and not
    /// in the first second, unless `force`.
    func update(phase: String, done: Int, total: Int?, force: Bool = false) {
        let now = ContinuousClock.now
        samples.append((now, done))
        // Samples of the last 5 s, and at least two.
        let keepFrom = min(samples.firstIndex { now - $0.0 <= .seconds(5) } ?? samples.count, max(0, samples.count - 2))
        samples.removeFirst(keepFrom)
        if !force {
            if now - started < .seconds(1) { return }
            if let lastReport, now - lastReport < interval { return }
        }
        lastReport = now
        let rate = self.rate
        let eta = total.flatMap { total in rate > 0 ? Double(max(0, total - done)) / rate : nil }
        if isTerminal {
            var text = "\(phase): \(done)"
            if let total {
                let percent = total > 0 ? Double(done) * 100 / Double(total) : 100
                text += "/\(total) records (\(String(format: "%.0f", percent)) %)"
            } else {
                text += " records"
            }
            text += ", \(String(format: "%.0f", rate)) records/s"
            if total != nil { text += ", \(eta.map { Self.duration($0) } ?? "–") left" }
            status.write("\r\u{1B}[K" + text)
            statusShown = true
            status.flush()
        } else {
            var fields: [(String, Field)] = [("phase", .string(phase)), ("done", .int(done))]
            if let total { fields.append(("total", .int(total))) }
            fields.append(("rate", .double(rate)))
            if let eta { fields.append(("etaSeconds", .double(eta))) }
            line("progress", fields, to: status)
        }
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
            results.write(text() + "\n")
            results.flush()
        } else {
            line(event, fields, to: results)
        }
    }

    /// Closes the status line so that ordinary output starts on a fresh line.
    func endStatus() {
        guard statusShown else { return }
        status.write("\n")
        status.flush()
        statusShown = false
    }

    private func line(_ event: String, _ fields: [(String, Field)], to writer: LineWriter) {
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
        duration.timeInterval
    }
}
