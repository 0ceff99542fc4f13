import Foundation
import Synchronization

/// A process-wide set of metrics rendered in the Prometheus text exposition format.
///
/// Metrics are identified by name plus a label set. All updates go through one `Mutex`;
/// each update is a dictionary write, cheap next to the I/O the services do per record.
public final class MetricsRegistry: Sendable {
    public typealias Labels = [String: String]

    struct Key: Hashable, Sendable {
        let name: String
        let labels: [String]  // "k=\"v\"" pairs, sorted
    }

    struct HistogramState: Sendable {
        var buckets: [Double]
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0

        mutating func record(_ value: Double) {
            for (i, bound) in buckets.enumerated() where value <= bound { counts[i] += 1 }
            sum += value
            count += 1
        }
    }

    struct State: Sendable {
        var help: [String: (type: String, text: String)] = [:]
        var counters: [Key: Double] = [:]
        var gauges: [Key: Double] = [:]
        var histograms: [Key: HistogramState] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// Latency buckets in seconds, 0.5 ms to 10 s.
    public static let latencyBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    public func describe(_ name: String, type: String, help: String) {
        state.withLock { $0.help[name] = (type, help) }
    }

    public func increment(_ name: String, by amount: Double = 1, labels: Labels = [:]) {
        let key = Self.key(name, labels)
        state.withLock { $0.counters[key, default: 0] += amount }
    }

    /// Sets a counter to a total counted elsewhere (a count the component keeps itself);
    /// it must only grow.
    public func setTotal(_ name: String, _ value: Double, labels: Labels = [:]) {
        let key = Self.key(name, labels)
        state.withLock { $0.counters[key] = value }
    }

    public func set(_ name: String, _ value: Double, labels: Labels = [:]) {
        let key = Self.key(name, labels)
        state.withLock { $0.gauges[key] = value }
    }

    public func observe(_ name: String, _ value: Double, labels: Labels = [:], buckets: [Double] = MetricsRegistry.latencyBuckets) {
        let key = Self.key(name, labels)
        state.withLock { s in
            // In place: the histogram's arrays are not copied out of the dictionary and back.
            s.histograms[key, default: HistogramState(buckets: buckets, counts: Array(repeating: 0, count: buckets.count))].record(value)
        }
    }

    /// Current value of a counter or gauge (tests and health checks).
    public func value(_ name: String, labels: Labels = [:]) -> Double? {
        let key = Self.key(name, labels)
        return state.withLock { $0.counters[key] ?? $0.gauges[key] ?? $0.histograms[key].map { Double($0.count) } }
    }

    /// The Prometheus text format (version 0.0.4).
    public func render() -> String {
        let s = state.withLock { $0 }
        var out = ""
        var described = Set<String>()
        func header(_ name: String, _ fallbackType: String) {
            guard described.insert(name).inserted else { return }
            if let h = s.help[name] { out += "# HELP \(name) \(h.text)\n# TYPE \(name) \(h.type)\n" } else { out += "# TYPE \(name) \(fallbackType)\n" }
        }
        func labels(_ pairs: [String], extra: String? = nil) -> String {
            let all = pairs + (extra.map { [$0] } ?? [])
            return all.isEmpty ? "" : "{" + all.joined(separator: ",") + "}"
        }
        for key in s.counters.keys.sorted(by: Self.order) {
            header(key.name, "counter")
            out += "\(key.name)\(labels(key.labels)) \(Self.format(s.counters[key]!))\n"
        }
        for key in s.gauges.keys.sorted(by: Self.order) {
            header(key.name, "gauge")
            out += "\(key.name)\(labels(key.labels)) \(Self.format(s.gauges[key]!))\n"
        }
        for key in s.histograms.keys.sorted(by: Self.order) {
            header(key.name, "histogram")
            let h = s.histograms[key]!
            for (i, bound) in h.buckets.enumerated() {
                out += "\(key.name)_bucket\(labels(key.labels, extra: "le=\"\(Self.format(bound))\"")) \(h.counts[i])\n"
            }
            out += "\(key.name)_bucket\(labels(key.labels, extra: "le=\"+Inf\"")) \(h.count)\n"
            out += "\(key.name)_sum\(labels(key.labels)) \(Self.format(h.sum))\n"
            out += "\(key.name)_count\(labels(key.labels)) \(h.count)\n"
        }
        return out
    }

    static func key(_ name: String, _ labels: Labels) -> Key {
        Key(name: name, labels: labels.keys.sorted().map { "\($0)=\"\(escape(labels[$0]!))\"" })
    }

    static func order(_ a: Key, _ b: Key) -> Bool {
        a.name == b.name ? a.labels.lexicographicallyPrecedes(b.labels) : a.name < b.name
    }

    static func escape(_ value: String) -> String {
        // Label values almost never need escaping; scanning the bytes is far cheaper than three replacements.
        guard value.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\n") }) else {
            return value
        }
        return value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }

    static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
