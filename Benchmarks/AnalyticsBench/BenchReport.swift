import Foundation
import Lifecycle

/// Percentiles of a set of durations, in milliseconds.
struct LatencySample {
    var millis: [Double] = []

    mutating func add(_ duration: Duration) {
        millis.append(duration.timeInterval * 1000)
    }

    func percentile(_ p: Double) -> Double {
        let sorted = millis.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }

    var summary: String { String(format: "p50 %.3f ms  p99 %.3f ms  max %.3f ms  (n=%d)", percentile(0.5), percentile(0.99),
                                 percentile(1.0), millis.count) }
}

func seconds(_ duration: Duration) -> Double { duration.timeInterval }

/// Progress on stderr, unbuffered.
func log(_ message: String) {
    FileHandle.standardError.write(Data("  · \(message)\n".utf8))
}
