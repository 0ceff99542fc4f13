import Synchronization

/// A counter that loops wait on: `notify()` bumps it, `wait(after:upTo:)` returns as soon as
/// it moved past what the caller saw, or after `timeout`. Cheap enough to check every few
/// milliseconds, and nothing is lost when nobody is waiting (the next wait returns at once).
final class WakeSignal: Sendable {
    private let generation = Atomic<UInt64>(0)

    var current: UInt64 { generation.load(ordering: .acquiring) }

    func notify() { generation.add(1, ordering: .releasing) }

    /// Waits until the generation differs from `seen` or `timeout` passed; returns the
    /// generation then (throws only on cancellation).
    @discardableResult
    func wait(after seen: UInt64, upTo timeout: Duration) async throws -> UInt64 {
        let deadline = ContinuousClock.now + timeout
        while current == seen, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        return current
    }
}
