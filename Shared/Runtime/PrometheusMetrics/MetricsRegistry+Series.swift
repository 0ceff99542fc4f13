import Synchronization

extension MetricsRegistry {
    /// One metric's name and label set, with its key built (labels sorted and escaped) once: for
    /// a series updated on every request, whose labels come from a small fixed set.
    public struct Series: Sendable, Hashable {
        let key: Key

        public init(_ name: String, labels: Labels = [:]) {
            key = MetricsRegistry.key(name, labels)
        }

        init(key: Key) { self.key = key }
    }

    /// `increment(_:by:labels:)` of a series whose key is already built.
    public func increment(_ series: Series, by amount: Double = 1) {
        state.withLock { $0.counters[series.key, default: 0] += amount }
    }

    /// `observe(_:_:labels:buckets:)` of a series whose key is already built.
    public func observe(_ series: Series, _ value: Double, buckets: [Double] = MetricsRegistry.latencyBuckets) {
        state.withLock { s in
            Self.record(value, in: &s.histograms[series.key, default: HistogramState(buckets: buckets, counts: Array(repeating: 0, count: buckets.count))])
        }
    }

    /// Counts `value` in place (the histogram's arrays are not copied).
    static func record(_ value: Double, in h: inout HistogramState) {
        for (i, bound) in h.buckets.enumerated() where value <= bound { h.counts[i] += 1 }
        h.sum += value
        h.count += 1
    }
}
