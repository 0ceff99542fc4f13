extension Duration {
    /// The duration in seconds, fractions included (a `TimeInterval`).
    public var timeInterval: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Whole milliseconds, rounded down, at least 0 (librdkafka's `*.ms` properties, SQL intervals).
    public var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
