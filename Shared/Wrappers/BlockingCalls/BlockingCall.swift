import Dispatch

/// Runs blocking C calls (librdkafka's constructor and admin requests, libcurl transfers,
/// libpq's cancel, waiting for a child process) on threads of their own, never on the threads
/// that run Swift tasks.
///
/// On Linux the concurrency runtime runs tasks on libdispatch's default-QoS global queue, whose
/// threads are capped at the number of cores, and a custom concurrent queue (or
/// `DispatchQueue.global()`) draws on those same threads: a blocking call there held one of
/// the two threads of a 2-core machine, and two held every task of the process. Measured: while
/// four 1-second calls ran on a concurrent queue, a task's 10 ms sleep woke 0.99 s late; with a
/// serial queue per call, 0.2 ms late. A serial queue runs on libdispatch's overcommit pool,
/// which adds a thread when the ones it has are blocked; each call gets a queue of its own.
public enum BlockingCall {
    /// Runs `body` on a thread outside the task pool and returns its result, or throws its error.
    public static func run<T: Sendable, Failure: Error>(
        _ label: String, _ body: @escaping @Sendable () throws(Failure) -> T
    ) async throws(Failure) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, Failure>, Never>) in
            DispatchQueue(label: label).async { continuation.resume(returning: Result(catching: body)) }
        }
        return try result.get()
    }

    /// Runs `body` on a thread outside the task pool without waiting for it.
    public static func detach(_ label: String, _ body: @escaping @Sendable () -> Void) {
        DispatchQueue(label: label).async(execute: body)
    }
}
