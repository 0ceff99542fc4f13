import ServiceLogging
import Synchronization

/// The producer's shared state and callback context (the handle's opaque): lifecycle,
/// in-progress `produce` calls, and tasks waiting for queue space.
final class ProducerCore: RdKafkaCallbackContext {
    let logger: Logger

    private struct State {
        var isShuttingDown = false
        var activeCalls = 0
        var spaceWaiters: [CheckedContinuation<Void, Never>] = []
        var isShutDown = false
        var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
        /// The shutdown waiting for the calls in flight to end (resumed by the last `endCall`).
        var idleWaiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())
    /// How often a send waited for queue space (for metrics and tests).
    let backpressureWaits = Atomic<Int>(0)

    init(logger: Logger) { self.logger = logger }

    /// Registers an in-progress produce call; `false` once shutdown began.
    func beginCall() -> Bool {
        state.withLock { state in
            guard !state.isShuttingDown else { return false }
            state.activeCalls += 1
            return true
        }
    }

    func endCall() {
        let idle = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.activeCalls -= 1
            guard state.activeCalls == 0 else { return nil }
            defer { state.idleWaiter = nil }
            return state.idleWaiter
        }
        idle?.resume()
    }

    /// Returns once no call is in flight (after `beginShutdown`, none starts any more).
    func waitForCallsToEnd() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                if state.activeCalls == 0 { return true }
                state.idleWaiter = continuation
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// Marks the producer as shutting down; `false` if it already was.
    func beginShutdown() -> Bool {
        let waiters: [CheckedContinuation<Void, Never>]? = state.withLock { state in
            guard !state.isShuttingDown else { return nil }
            state.isShuttingDown = true
            defer { state.spaceWaiters = [] }
            return state.spaceWaiters
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume() }
        return true
    }

    /// Marks shutdown complete and wakes callers waiting for it.
    func finishShutdown() {
        let waiters = state.withLock { state in
            state.isShutDown = true
            defer { state.shutdownWaiters = [] }
            return state.shutdownWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func waitUntilShutDown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                if !state.isShutDown { state.shutdownWaiters.append(continuation) }
                return state.isShutDown
            }
            if done { continuation.resume() }
        }
    }

    /// Suspends until the poll thread has served delivery reports (freeing queue space).
    func waitForQueueSpace() async {
        backpressureWaits.add(1, ordering: .relaxed)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state in
                if state.isShuttingDown { return true }
                state.spaceWaiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func wakeBackpressureWaiters() {
        let waiters = state.withLock { state in
            defer { state.spaceWaiters = [] }
            return state.spaceWaiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
