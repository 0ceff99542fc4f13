import Foundation
import ServiceRuntime

/// The last minute of each consumer group's lag and apply rate, for the live view's sparklines.
struct StatusHistory {
    static let length = 60
    var lag: [String: [Double]] = [:]
    var rate: [String: [Double]] = [:]

    mutating func add(_ report: StatusReport) {
        for group in report.consumerGroups {
            Self.append(group.value.lagSeconds ?? 0, to: &lag[group.value.group, default: []])
            if let rate = group.value.applyRatePerSecond { Self.append(rate, to: &self.rate[group.value.group, default: []]) }
        }
    }

    static func append(_ value: Double, to series: inout [Double]) {
        series.append(value)
        if series.count > length { series.removeFirst(series.count - length) }
    }

    /// `▁▂▃▄▅▆▇█`, scaled to the series' own maximum (all `▁` when it is flat at 0).
    static func sparkline(_ values: [Double]) -> String {
        let bars = Array("▁▂▃▄▅▆▇█")
        guard let top = values.max(), top > 0 else { return String(repeating: "▁", count: values.count) }
        return String(values.map { bars[min(bars.count - 1, Int(($0 / top) * Double(bars.count - 1) + 0.5))] })
    }
}

/// The live view of `backbone status` on a terminal: one section per kind of thing, each
/// line with its state, and the reason on the line that caused it.
enum StatusScreen {
    /// Moves the cursor home and clears the terminal: each frame replaces the last.
    static let clear = "\u{1B}[H\u{1B}[2J"

    /// What one redraw writes to the terminal: the clear, then the frame.
    static func redraw(_ report: StatusReport, history: StatusHistory, interval: Int) -> String {
        clear + render(report, history: history, interval: interval)
    }

    static func render(_ report: StatusReport, history: StatusHistory, interval: Int) -> String {
        var out = "backbone status — \(report.status.rawValue.uppercased())   \(ISO8601DateFormatter().string(from: report.takenAt))"
            + "   (every \(interval) s; Ctrl-C to stop)\n"
        func mark(_ state: StatusReport.Health) -> String {
            switch state {
            case .healthy: return "ok"
            case .degraded: return "DEGRADED"
            case .down: return "DOWN"
            }
        }
        func because(_ reason: String?) -> String { reason.map { "  ← \($0)" } ?? "" }
        func number(_ value: Double?) -> String { value.map { String(format: "%.0f", $0) } ?? "-" }
        out += "\nPostgreSQL \(mark(report.postgres.state))\(because(report.postgres.reason))"
        out += "\nKafka      \(mark(report.kafka.state))\(because(report.kafka.reason))\n"

        var cells = [["SERVICE", "STATE", "URL", ""]]
        for service in report.services {
            cells.append([service.value.name, service.value.state, service.value.url, because(service.reason)])
        }
        out += "\n" + CommandOutput.table(cells)

        cells = [["CONSUMER GROUP", "LAG", "BEHIND (s)", "RATE (/s)", "LAG s, last \(StatusHistory.length)", "RATE", ""]]
        for group in report.consumerGroups {
            let measured = group.value
            cells.append([measured.group, String(measured.lagRecords), number(measured.lagSeconds),
                          measured.applyRatePerSecond.map { String(format: "%.1f", $0) } ?? "-",
                          StatusHistory.sparkline(history.lag[measured.group] ?? []),
                          StatusHistory.sparkline(history.rate[measured.group] ?? []), because(group.reason)])
        }
        out += "\n" + (report.consumerGroups.isEmpty ? "no consumer group has stored a position yet\n" : CommandOutput.table(cells))

        cells = [["DEAD-LETTER TOPIC", "RECORDS", "SINCE LAST REPLAY", ""]]
        for queue in report.deadLetterQueues {
            cells.append([queue.value.topic, String(queue.value.records), String(queue.value.sinceLastReplay), because(queue.reason)])
        }
        out += "\n" + (report.deadLetterQueues.isEmpty ? "no dead-letter topics\n" : CommandOutput.table(cells))

        cells = [["OUTBOX", "SERVICE", "ENTRIES", "OLDEST (s)", ""]]
        for outbox in report.outboxes {
            let measured = outbox.value
            cells.append([measured.outbox.name, measured.outbox.service, String(measured.entries), number(measured.oldestAgeSeconds),
                          because(outbox.reason)])
        }
        if report.outboxes.count > 0 { out += "\n" + CommandOutput.table(cells) }

        out += "\n"
        if let line = report.transcodeQueue {
            let queue = line.value
            out += "transcode queue    queued \(queue.queued), transcoding \(queue.transcoding), oldest queued "
                + "\(queue.oldestQueuedAgeSeconds.map { "\(number($0)) s" } ?? "-"), failed in the last hour \(queue.failedLastHour)\(because(line.reason))\n"
        }
        if let line = report.uploads {
            out += "uploads            uploading \(line.value.uploading), completed and not yet queued \(line.value.pending)"
                + "\(because(line.reason))\n"
        }
        if let line = report.accountDeletions {
            out += "account deletions  scheduled \(line.value.scheduled), purging \(line.value.purging)\(because(line.reason))\n"
        }
        return out
    }
}
