import Dispatch

extension Duration {
    /// The duration in seconds, fractions included (a `TimeInterval`).
    public var timeInterval: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Whole seconds, rounded down, at least 0 (a presigned URL's life, an HTTP `max-age`).
    public var wholeSeconds: Int64 { max(0, components.seconds) }

    /// Whole milliseconds, rounded down, at least 0 (librdkafka's `*.ms` properties, SQL intervals).
    public var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    /// Whole microseconds, rounded down, at least 0 (PostgreSQL's `interval` as microseconds).
    public var wholeMicroseconds: Int64 {
        let (seconds, attoseconds) = components
        return max(0, seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
    }

    /// The duration as a Dispatch interval, whole nanoseconds, at least 0 (Dispatch deadlines
    /// and semaphore waits).
    public var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return .nanoseconds(0) }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return .nanoseconds(overflow ? Int.max : Int(clamping: whole &+ attoseconds / 1_000_000_000))
    }
}
