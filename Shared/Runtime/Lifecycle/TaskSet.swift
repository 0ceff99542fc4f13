import Synchronization

/// The owner of tasks started where nothing can await them — a C library's callback thread, a
/// delegate method, a call made under a lock: an HTTP request's handler, a socket's session, a
/// catch-up. Each task leaves the set when it ends; the service that owns the set waits for
/// what is left on shutdown (`shutdown()`, or `run()` as one of its services), so no task
/// outlives the service that started it — what a task group in `run()` does for work that
/// starts inside it.
public final class TaskSet: Sendable {
    private struct State {
        var tasks: [UInt64: Task<Void, Never>] = [:]
        var nextID: UInt64 = 0
        /// Set by `cancelAll()`: tasks started from then on start cancelled.
        var cancelled = false
    }

    private let state = Mutex(State())

    public init() {}

    /// Tasks started and not yet ended.
    public var count: Int { state.withLock { $0.tasks.count } }

    /// Starts `body` as a task of this set. After `cancelAll()` it still runs (whoever started
    /// it may wait for its answer), but starts cancelled.
    public func spawn(_ body: @escaping @Sendable () async -> Void) {
        state.withLock { state in
            state.nextID += 1
            let id = state.nextID
            // Owned: kept in `tasks` until it ends, awaited by `waitForAll()`. Made under the lock,
            // so its own removal (which takes the lock) always comes after its insertion.
            let task = Task {
                await body()
                self.remove(id)
            }
            if state.cancelled { task.cancel() }
            state.tasks[id] = task
        }
    }

    private func remove(_ id: UInt64) {
        _ = state.withLock { $0.tasks.removeValue(forKey: id) }
    }

    /// Cancels every running task, and every task started later.
    public func cancelAll() {
        let tasks = state.withLock { state in
            state.cancelled = true
            return Array(state.tasks.values)
        }
        for task in tasks { task.cancel() }
    }

    /// Returns once no task of the set runs (tasks started meanwhile included).
    public func waitForAll() async {
        while let task = state.withLock({ $0.tasks.values.first }) {
            await task.value
        }
    }

    /// Cancels the tasks still running and waits for them to end.
    public func shutdown() async {
        cancelAll()
        await waitForAll()
    }

    /// Runs `body` (which starts tasks in this set); however it ends, the tasks still running
    /// are waited for before this returns — cancelled first, when `cancelling`.
    public func scope<T>(cancelling: Bool = true, _ body: () async throws -> T) async rethrows -> T {
        let result: T
        do {
            result = try await body()
        } catch {
            if cancelling { cancelAll() }
            await waitForAll()
            throw error
        }
        if cancelling { cancelAll() }
        await waitForAll()
        return result
    }
}

extension TaskSet: Service {
    public var name: String { "tasks" }

    /// Holds the set open until the service group stops it (its graceful phase, or
    /// cancellation), then lets the running tasks finish — cancelled, when the group cancelled
    /// this service — and returns once none is left.
    public func run() async throws {
        let stop = OneShotSignal()
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await stop.wait()
            } onCancel: {
                stop.fire()
            }
        } onGracefulShutdown: {
            stop.fire()
        }
        if Task.isCancelled { cancelAll() }
        await withTaskCancellationHandler {
            await waitForAll()
        } onCancel: {
            cancelAll()
        }
    }
}
