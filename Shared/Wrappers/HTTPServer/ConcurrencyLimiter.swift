import Synchronization

/// A FIFO async semaphore bounding how many handlers run at once.
/// Waiters are few (at most one per suspended connection), so a simple array queue suffices.
final class ConcurrencyLimiter: Sendable {
    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
        var head = 0
    }

    private let state: Mutex<State>

    init(limit: Int) {
        state = Mutex(State(available: max(1, limit)))
    }

    /// Waits for a slot. Not cancellable: every acquired slot is released by `release()`.
    func acquire() async {
        let acquired = state.withLock { state -> Bool in
            guard state.available > 0 else { return false }
            state.available -= 1
            return true
        }
        if acquired { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                // A slot may have been released between the two locks.
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Hands the slot to the oldest waiter, or returns it to the pool.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.head < state.waiters.count {
                let waiter = state.waiters[state.head]
                state.head += 1
                if state.head == state.waiters.count {
                    state.waiters.removeAll(keepingCapacity: true)
                    state.head = 0
                } else if state.head >= 64, state.head * 2 >= state.waiters.count {
                    // Under a steady overload the queue never empties: the served half goes,
                    // so it holds only the waiting (not every request since the overload began).
                    state.waiters.removeFirst(state.head)
                    state.head = 0
                }
                return waiter
            }
            state.available += 1
            return nil
        }
        next?.resume()
    }
}
