import Dispatch
import Logging
import Synchronization

/// The bounded pool behind `PostgresClient`: a state machine in a `Mutex`. Transitions
/// return what to do; connecting, closing and resuming waiters happen outside the lock.
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
        var waiters: [(id: UInt64, continuation: Waiter)] = []
        var cancelledWaiters: Set<UInt64> = []
        var nextWaiterID: UInt64 = 0
        var closed = false
    }

    let configuration: PostgresConfiguration
    let logger: Logger
    private let state = Mutex(State())

    init(configuration: PostgresConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
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
                await connection.refreshIdleState()
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
                let immediate: Result<Lease, PostgresError>? = state.withLock { state in
                    if state.closed { return .failure(.closed()) }
                    if state.cancelledWaiters.remove(id) != nil { return .failure(Self.cancelled) }
                    if let connection = state.idle.popLast() { return .success(.connection(connection)) }
                    if state.open < configuration.maxConnections {
                        state.open += 1
                        return .success(.slot)
                    }
                    state.waiters.append((id, continuation))
                    return nil
                }
                if let immediate {
                    continuation.resume(returning: immediate)
                } else {
                    scheduleTimeout(for: id)
                }
            }
        } onCancel: {
            self.fail(waiter: id, with: Self.cancelled, rememberIfAbsent: true)
        }
        // A cancellation that arrived after the waiter was served left a marker: drop it.
        state.withLock { _ = $0.cancelledWaiters.remove(id) }
        return try result.get()
    }

    private func scheduleTimeout(for id: UInt64) {
        let components = configuration.acquireTimeout.components
        let nanoseconds = max(0, components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000)
        let timeout = PostgresError(
            code: .poolTimeout,
            message: "no connection became free within \(configuration.acquireTimeout) (maxConnections \(configuration.maxConnections))")
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [weak self] in
            self?.fail(waiter: id, with: timeout, rememberIfAbsent: false)
        }
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
