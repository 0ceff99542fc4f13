import BlockingCalls
import Dispatch
import Synchronization
internal import CLibPQ

/// Cancels a connection's in-flight statement when the awaiting task is cancelled.
///
/// Holds the connection's `PGcancel` token. `PQcancel` runs under the lock on a global
/// queue (it opens a short side connection), and only while the cancelled operation is
/// still the one running, so a late cancel never hits the next statement on the
/// connection. Operations cancelled before they start do not run at all.
final class QueryCanceller: Sendable {
    /// The `PGcancel *` from `PQgetCancel`.
    // @unchecked Sendable: the pointer is only dereferenced (PQcancel, PQfreeCancel)
    // while holding the canceller's lock, so it is never used from two threads at once.
    private struct Token: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private struct State: Sendable {
        var token: Token?
        var running: UInt64?
        var lastStarted: UInt64 = 0
        var cancelledBeforeStart: Set<UInt64> = []
    }

    private let state: Mutex<State>
    private let nextOperation = Atomic<UInt64>(0)

    init(token: OpaquePointer?) {
        state = Mutex(State(token: token.map(Token.init)))
    }

    func makeOperationID() -> UInt64 {
        nextOperation.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// Marks `operation` as running; `false` when it was cancelled before it started.
    func begin(_ operation: UInt64) -> Bool {
        state.withLock { state in
            state.lastStarted = max(state.lastStarted, operation)
            if state.cancelledBeforeStart.remove(operation) != nil { return false }
            state.running = operation
            return true
        }
    }

    func end(_ operation: UInt64) {
        state.withLock { state in
            if state.running == operation { state.running = nil }
        }
    }

    /// Called from a task cancellation handler.
    func cancel(_ operation: UInt64) {
        let runningNow = state.withLock { state -> Bool in
            if state.running == operation { return true }
            if operation > state.lastStarted { state.cancelledBeforeStart.insert(operation) }
            return false
        }
        guard runningNow else { return }
        // PQcancel connects to the server and waits for it: off the threads that run tasks.
        BlockingCall.detach("postgres.cancel") {
            self.state.withLock { state in
                guard state.running == operation, let token = state.token else { return }
                var buffer = [CChar](repeating: 0, count: 256)
                _ = PQcancel(token.pointer, &buffer, Int32(buffer.count))
            }
        }
    }

    /// Frees the token; called when the connection closes.
    func invalidate() {
        state.withLock { state in
            if let token = state.token { PQfreeCancel(token.pointer) }
            state.token = nil
        }
    }

    deinit {
        state.withLock { state in
            if let token = state.token { PQfreeCancel(token.pointer) }
        }
    }
}
