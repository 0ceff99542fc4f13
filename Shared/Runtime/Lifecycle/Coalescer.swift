import Synchronization

/// Runs one operation for the work of many concurrent callers: a call made while a run is
/// in flight waits and joins the next run, which takes everything queued by then (up to
/// `maxItems`). Under load, N requests cost one statement instead of N; alone, a call runs
/// at once. Every caller of a run gets that run's whole output (or its error). Up to
/// `concurrentRuns` runs are in flight at a time (each on its own connection). A run is made
/// in the task of one of its callers, so cancelling that caller cancels the run.
public final class Coalescer<Item: Sendable, Output: Sendable>: Sendable {
    public typealias Operation = @Sendable ([Item]) async throws -> Output

    /// What a waiting caller is woken with: the output of the run that took its items, or the
    /// turn to run the next one itself.
    private enum Turn {
        case served(Result<Output, any Error>)
        case lead
    }

    private struct Waiter {
        var items: [Item]
        var continuation: CheckedContinuation<Turn, Never>
    }

    private struct State {
        var waiting: [Waiter] = []
        /// Runs in flight; while all `concurrentRuns` are, callers wait.
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

    /// Each run is made by one of the callers, in its own task (no task of the coalescer's own
    /// outlives its callers): the caller that finds a run free leads one with the items of those
    /// waiting, then hands the turn to the first caller still waiting.
    public func run(_ items: [Item]) async throws -> Output {
        let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            let leads = state.withLock { state -> Bool in
                guard state.running < concurrentRuns else {
                    state.waiting.append(Waiter(items: items, continuation: continuation))
                    return false
                }
                state.running += 1
                return true
            }
            if leads { continuation.resume(returning: .lead) }
        }
        switch turn {
        case .served(let result): return try result.get()
        case .lead: return try await lead(items)
        }
    }

    /// One run: `own` and the waiters that fit behind them (up to `maxItems`), each answered,
    /// then the turn passed on (or the run freed when nobody waits).
    private func lead(_ own: [Item]) async throws -> Output {
        let riders = state.withLock { state -> [Waiter] in
            var count = own.count
            var taken = 0
            while taken < state.waiting.count, count + state.waiting[taken].items.count <= maxItems {
                count += state.waiting[taken].items.count
                taken += 1
            }
            defer { state.waiting.removeFirst(taken) }
            return Array(state.waiting[..<taken])
        }
        let result: Result<Output, any Error>
        do {
            result = .success(try await operation(own + riders.flatMap(\.items)))
        } catch {
            result = .failure(error)
        }
        for rider in riders { rider.continuation.resume(returning: .served(result)) }
        let next = state.withLock { state -> Waiter? in
            guard !state.waiting.isEmpty else {
                state.running -= 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.continuation.resume(returning: .lead)
        return try result.get()
    }
}
