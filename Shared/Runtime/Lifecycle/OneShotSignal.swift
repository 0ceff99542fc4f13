import Dispatch
import ServiceLogging
import Synchronization

/// An event that fires once; `wait()` returns immediately after it has fired. The one waiter
/// queue of the servers' and clients' threads ("stopped", "finished").
public final class OneShotSignal: Sendable {
    private struct State {
        var fired = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// `wait(until:)`'s waiters, by the id their deadline's timer knows them by.
        var timedWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    public var hasFired: Bool { state.withLock { $0.fired } }

    public func fire() {
        let (waiters, timed) = state.withLock { state -> ([CheckedContinuation<Void, Never>], [CheckedContinuation<Bool, Never>]) in
            guard !state.fired else { return ([], []) }
            state.fired = true
            defer {
                state.waiters = []
                state.timedWaiters = [:]
            }
            return (state.waiters, Array(state.timedWaiters.values))
        }
        for waiter in waiters { waiter.resume() }
        for waiter in timed { waiter.resume(returning: true) }
    }

    /// Waits until the signal fires or `deadline` passes, whichever comes first; returns whether
    /// it fired. The deadline is kept by a timer on a dispatch queue, not by a task.
    public func wait(until deadline: ContinuousClock.Instant) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id = state.withLock { state -> UInt64? in
                if state.fired { return nil }
                state.nextID += 1
                state.timedWaiters[state.nextID] = continuation
                return state.nextID
            }
            guard let id else { return continuation.resume(returning: true) }
            let delay = max(.zero, ContinuousClock.now.duration(to: deadline))
            DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) { [self] in
                state.withLock { $0.timedWaiters.removeValue(forKey: id) }?.resume(returning: false)
            }
        }
    }

    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let firedAlready = state.withLock { state -> Bool in
                if state.fired { return true }
                state.waiters.append(continuation)
                return false
            }
            if firedAlready { continuation.resume() }
        }
    }
}
