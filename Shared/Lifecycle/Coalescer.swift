import Synchronization

/// Runs one operation for the work of many concurrent callers: a call made while a run is
/// in flight waits and joins the next run, which takes everything queued by then (up to
/// `maxItems`). Under load, N requests cost one statement instead of N; alone, a call runs
/// at once. Every caller of a run gets that run's whole output (or its error). Up to
/// `concurrentRuns` runs are in flight at a time (each on its own connection).
public final class Coalescer<Item: Sendable, Output: Sendable>: Sendable {
    public typealias Operation = @Sendable ([Item]) async throws -> Output

    private struct Waiter {
        var items: [Item]
        var continuation: CheckedContinuation<Output, any Error>
    }

    private struct State {
        var waiting: [Waiter] = []
        var running = 0
    }

    private let state = Mutex(State())
    private let maxItems: Int
    private let concurrentRuns: Int
    private let operation: Operation

    public init(maxItems: Int = 5_000, concurrentRuns: Int = 1, _ operation: @escaping Operation) {
        self.maxItems = maxItems
        self.concurrentRuns = max(1, concurrentRuns)
        self.operation = operation
    }

    public func run(_ items: [Item]) async throws -> Output {
        try await withCheckedThrowingContinuation { continuation in
            let start = state.withLock { state in
                state.waiting.append(Waiter(items: items, continuation: continuation))
                guard state.running < concurrentRuns else { return false }
                state.running += 1
                return true
            }
            if start { Task { await drain() } }
        }
    }

    private func drain() async {
        while let batch = next() {
            do {
                let output = try await operation(batch.flatMap(\.items))
                for waiter in batch { waiter.continuation.resume(returning: output) }
            } catch {
                for waiter in batch { waiter.continuation.resume(throwing: error) }
            }
        }
    }

    /// The waiters of the next run, or nil (and this drainer stopped) when none are left.
    private func next() -> [Waiter]? {
        state.withLock { state in
            guard !state.waiting.isEmpty else {
                state.running -= 1
                return nil
            }
            var count = 0
            var taken = 0
            while taken < state.waiting.count, taken == 0 || count + state.waiting[taken].items.count <= maxItems {
                count += state.waiting[taken].items.count
                taken += 1
            }
            defer { state.waiting.removeFirst(taken) }
            return Array(state.waiting[..<taken])
        }
    }
}
