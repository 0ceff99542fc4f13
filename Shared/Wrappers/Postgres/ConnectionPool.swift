import Dispatch
import Lifecycle
import ServiceLogging
import Synchronization

/// The bounded pool behind `PostgresClient`: a state machine in a `Mutex`. Transitions
/// return what to do; connecting, closing, resuming waiters and arming the timer happen
/// outside the lock.
///
/// Waiters time out through one timer per pool, not one per waiter: all wait the same
/// `acquireTimeout` and queue in arrival order, so the first waiter's deadline is the
/// earliest. The timer is armed for it when the queue gets its first waiter, fails every
/// waiter whose deadline has passed when it fires, and re-arms for the new first one while
/// any wait.
final class ConnectionPool: Sendable {
    /// What an acquirer gets: a pooled connection, or a reserved slot to open one in.
    enum Lease: Sendable {
        case connection(PostgresConnection)
        case slot
    }

    private typealias Waiter = CheckedContinuation<Result<Lease, PostgresError>, Never>

    private struct State {
        var idle: [PostgresConnection] = []
        /// Open connections plus reserved slots being connected.
        var open = 0
        /// In arrival order, so also in deadline order.
        var waiters: [(id: UInt64, continuation: Waiter, deadline: DispatchTime)] = []
        /// Whether the timeout timer is armed (it fires once; at most one is outstanding).
        var timerArmed = false
        var cancelledWaiters: Set<UInt64> = []
        var nextWaiterID: UInt64 = 0
        var closed = false
    }

    let configuration: PostgresConfiguration
    let logger: Logger
    private let state = Mutex(State())
    private let acquireTimeout: DispatchTimeInterval
    private let timeoutError: PostgresError

    init(configuration: PostgresConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.acquireTimeout = configuration.acquireTimeout.dispatchInterval
        self.timeoutError = PostgresError(
            code: .poolTimeout,
            message: "no connection became free within \(configuration.acquireTimeout) (maxConnections \(configuration.maxConnections))")
    }

    /// Number of open connections (in use, idle, or connecting).
    var openCount: Int { state.withLock { $0.open } }

    /// Waits for a free connection, opens a new one under the limit, or fails with
    /// `.poolTimeout` after `acquireTimeout`. With `checkingIdleState`, a pooled connection is
    /// first checked for what the server sent while it sat idle (a hand-off to its queue);
    /// without, the caller does that check in its own first hand-off.
    func acquire(checkingIdleState: Bool = true) async throws(PostgresError) -> PostgresConnection {
        while true {
            let lease = try await reserve()
            switch lease {
            case .connection(let connection):
                guard checkingIdleState else { return connection }
                connection.refreshIdleState()
                if connection.isReusable { return connection }
                discard(connection)
            case .slot:
                do {
                    return try await PostgresConnection.connect(configuration: configuration, logger: logger)
                } catch {
                    slotFailed()
                    throw error
                }
            }
        }
    }

    /// Returns a leased connection; broken, closed or mid-transaction ones are discarded.
    func release(_ connection: PostgresConnection) {
        guard connection.isReusable else {
            discard(connection)
            return
        }
        let action: (Waiter?, close: Bool) = state.withLock { state in
            if state.closed {
                state.open -= 1
                return (nil, true)
            }
            if !state.waiters.isEmpty { return (state.waiters.removeFirst().continuation, false) }
            state.idle.append(connection)
            return (nil, false)
        }
        action.0?.resume(returning: .success(.connection(connection)))
        if action.close { connection.closeInBackground() }
    }

    /// Closes idle connections, fails waiters, and makes later acquires fail with `.closed`.
    func close() async {
        let (idle, waiters) = state.withLock { state in
            state.closed = true
            let idle = state.idle
            let waiters = state.waiters
            state.idle = []
            state.waiters = []
            state.open -= idle.count
            return (idle, waiters)
        }
        for waiter in waiters { waiter.continuation.resume(returning: .failure(.closed())) }
        for connection in idle { await connection.close() }
    }

    // MARK: - Transitions

    private func reserve() async throws(PostgresError) -> Lease {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Waiter) in
                enum Admission {
                    case immediate(Result<Lease, PostgresError>)
                    case waiting(armTimerAt: DispatchTime?)
                }
                let admission: Admission = state.withLock { state in
                    if state.closed { return .immediate(.failure(.closed())) }
                    if state.cancelledWaiters.remove(id) != nil { return .immediate(.failure(Self.cancelled)) }
                    if let connection = state.idle.popLast() { return .immediate(.success(.connection(connection))) }
                    if state.open < configuration.maxConnections {
                        state.open += 1
                        return .immediate(.success(.slot))
                    }
                    // Taken under the lock, so deadlines never decrease along the queue.
                    let deadline = DispatchTime.now() + acquireTimeout
                    state.waiters.append((id, continuation, deadline))
                    if state.timerArmed { return .waiting(armTimerAt: nil) }
                    state.timerArmed = true
                    return .waiting(armTimerAt: deadline)
                }
                switch admission {
                case .immediate(let result): continuation.resume(returning: result)
                case .waiting(let deadline): if let deadline { armTimer(at: deadline) }
                }
            }
        } onCancel: {
            self.fail(waiter: id, with: Self.cancelled, rememberIfAbsent: true)
        }
        // A cancellation that arrived after the waiter was served left a marker: drop it.
        state.withLock { _ = $0.cancelledWaiters.remove(id) }
        return try result.get()
    }

    private func armTimer(at deadline: DispatchTime) {
        DispatchQueue.global().asyncAfter(deadline: deadline) { [weak self] in self?.timerFired() }
    }

    /// Fails the waiters whose deadline has passed; re-arms for the first one left.
    private func timerFired() {
        let (expired, next): ([Waiter], DispatchTime?) = state.withLock { state in
            let now = DispatchTime.now()
            var expired: [Waiter] = []
            var count = 0
            while count < state.waiters.count, state.waiters[count].deadline <= now {
                expired.append(state.waiters[count].continuation)
                count += 1
            }
            state.waiters.removeFirst(count)
            guard let first = state.waiters.first else {
                state.timerArmed = false
                return (expired, nil)
            }
            return (expired, first.deadline)
        }
        for waiter in expired { waiter.resume(returning: .failure(timeoutError)) }
        if let next { armTimer(at: next) }
    }

    private func fail(waiter id: UInt64, with error: PostgresError, rememberIfAbsent: Bool) {
        let continuation: Waiter? = state.withLock { state in
            if let index = state.waiters.firstIndex(where: { $0.id == id }) {
                return state.waiters.remove(at: index).continuation
            }
            if rememberIfAbsent { state.cancelledWaiters.insert(id) }
            return nil
        }
        continuation?.resume(returning: .failure(error))
    }

    /// A connection left the pool for good: free its slot, or hand the slot to a waiter.
    private func discard(_ connection: PostgresConnection) {
        connection.closeInBackground()
        logger.debug("postgres connection discarded", metadata: ["pg.connection": String(connection.id)])
        slotFailed()
    }

    private func slotFailed() {
        let waiter: Waiter? = state.withLock { state in
            if !state.closed, !state.waiters.isEmpty { return state.waiters.removeFirst().continuation }
            state.open -= 1
            return nil
        }
        waiter?.resume(returning: .success(.slot))
    }

    private static let cancelled = PostgresError(code: .cancelled, message: "waiting for a connection was cancelled")
}
