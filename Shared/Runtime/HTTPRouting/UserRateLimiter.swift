import Foundation
import Lifecycle
import ServiceLogging
import Synchronization

/// A token bucket per key (a user, a client address, an account): `burst` requests at once,
/// refilled at `perSecond`. Per process; with several replicas each enforces its own share.
public final class UserRateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let perSecond: Double
    private let burst: Double
    private let buckets = Mutex<[String: Bucket]>([:])
    private static let pruneThreshold = 50_000

    public init(perSecond: Double, burst: Int) {
        self.perSecond = perSecond
        self.burst = Double(max(1, burst))
    }

    /// `nil` when the request may proceed, else the whole seconds until it may.
    public func acquire(_ user: String, now: ContinuousClock.Instant = .now) -> Int? {
        buckets.withLock { buckets in
            if buckets.count > Self.pruneThreshold { prune(&buckets, now: now) }
            var bucket = buckets[user] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + (now - bucket.updated).timeInterval * perSecond)
            bucket.updated = now
            defer { buckets[user] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return max(1, Int(((1 - bucket.tokens) / perSecond).rounded(.up)))
        }
    }

    /// Drops buckets that have refilled completely (they behave like new ones).
    private func prune(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant) {
        let full = burst / perSecond
        buckets = buckets.filter { (now - $0.value.updated).timeInterval < full }
    }
}
