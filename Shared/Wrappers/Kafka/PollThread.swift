import BlockingCalls
import Foundation
import Lifecycle
import ServiceLogging
import Synchronization

/// A dedicated thread that runs a librdkafka poll loop until asked to stop, so blocking
/// `RdKafkaClient.poll`/`consumerPoll` calls never run on the cooperative pool.
final class PollThread: Sendable {
    private let stopFlag = Atomic<Bool>(false)
    private let exit = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// Starts the thread. `body` should loop while `!thread.isStopRequested` and return when done.
    init(name: String, body: @escaping @Sendable (PollThread) -> Void) {
        let thread = Thread { [self] in
            body(self)
            let waiters = exit.withLock { state in
                state.done = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
        thread.name = name
        thread.start()
    }

    var isStopRequested: Bool { stopFlag.load(ordering: .acquiring) }

    /// Asks the loop to stop without waiting (it notices within one poll timeout).
    func requestStop() { stopFlag.store(true, ordering: .releasing) }

    /// Asks the loop to stop and suspends until the thread's body has returned.
    func stop() async {
        requestStop()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = exit.withLock { state in
                if !state.done { state.waiters.append(continuation) }
                return state.done
            }
            if done { continuation.resume() }
        }
    }
}

/// What the poll threads need besides `BlockingCall` (which runs librdkafka's blocking calls off
/// the threads that run tasks, with typed throws): work started without waiting, and async
/// work run from a poll thread.
enum Blocking {
    /// Runs `body` without waiting for it.
    static func detach(_ body: @escaping @Sendable () -> Void) {
        BlockingCall.detach("kafka.blocking", body)
    }

    /// Runs an async closure from a dedicated (non-cooperative) thread and blocks that thread
    /// until it finishes. Only for poll threads, e.g. to run a rebalance listener.
    static func wait<T: Sendable>(for body: @escaping @Sendable () async -> T) -> T {
        let box = ResultBox<T>()
        let semaphore = DispatchSemaphore(value: 0)
        Task {
            let result = await body()
            box.value.withLock { $0 = result }
            semaphore.signal()
        }
        semaphore.wait()
        return box.value.withLock { $0! }
    }

    /// Like `wait(for:)`, but cancels the task once `limit` has passed (a cancelled body is
    /// expected to return promptly) and reports whether it had to: the result is then the
    /// one the body returned after its cancellation.
    static func wait<T: Sendable>(limit: Duration, for body: @escaping @Sendable () async -> T) -> (T, cancelled: Bool) {
        let box = ResultBox<T>()
        let semaphore = DispatchSemaphore(value: 0)
        let task = Task {
            let result = await body()
            box.value.withLock { $0 = result }
            semaphore.signal()
        }
        var cancelled = false
        if semaphore.wait(timeout: .now() + limit.dispatchInterval) == .timedOut {
            cancelled = true
            task.cancel()
            semaphore.wait()
        }
        return (box.value.withLock { $0! }, cancelled)
    }
}

private final class ResultBox<T: Sendable>: Sendable {
    let value = Mutex<T?>(nil)
}
