import Foundation
import Logging

/// Progress of a long command (records done of a total, rate, time left), shown once it has
/// run for a second (quick runs stay quiet). On a terminal it
/// is one line on standard error, redrawn in place; otherwise a JSON line on standard error
/// at most once a second (`{"progress":"replay","done":120,"total":500,"perSecond":340.2,
/// "secondsLeft":1.1}`), so standard output carries only results. Used by one task at a time.
final class CommandProgress {
    let label: String
    var total: Int?
    private(set) var done = 0
    private let interactive: Bool
    private let started = ContinuousClock.now
    private var lastReport: ContinuousClock.Instant?
    private var drewLine = false

    init(_ label: String, total: Int?, interactive: Bool = CommandOutput.isTerminal) {
        self.label = label
        self.total = total
        self.interactive = interactive
    }

    func advance(by count: Int = 1) {
        done += count
        let interval: Duration = interactive ? .milliseconds(200) : .seconds(1)
        if ContinuousClock.now - started < .seconds(1) { return }
        if let lastReport, ContinuousClock.now - lastReport < interval { return }
        lastReport = .now
        report()
    }

    /// The last report (if any was shown), then a newline on a terminal.
    func finish() {
        guard lastReport != nil else { return }
        report()
        if interactive && drewLine { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    var perSecond: Double {
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return seconds > 0 ? Double(done) / seconds : 0
    }

    var secondsLeft: Double? {
        guard let total, perSecond > 0 else { return nil }
        return Double(max(0, total - done)) / perSecond
    }

    private func report() {
        if interactive {
            var line = "\(label): \(done)"
            if let total { line += "/\(total)" }
            line += " records, \(Int(perSecond.rounded()))/s"
            if let left = secondsLeft { line += ", \(Self.duration(left)) left" }
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
            drewLine = true
        } else {
            var line = "{\"progress\":\(JSONString.quote(label)),\"done\":\(done)"
            if let total { line += ",\"total\":\(total)" }
            line += ",\"perSecond\":\((perSecond * 10).rounded() / 10)"
            if let left = secondsLeft { line += ",\"secondsLeft\":\((left * 10).rounded() / 10)" }
            FileHandle.standardError.write(Data((line + "}\n").utf8))
        }
    }

    static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.up))
        return whole < 60 ? "\(whole)s" : "\(whole / 60)m\(String(format: "%02d", whole % 60))s"
    }
}
