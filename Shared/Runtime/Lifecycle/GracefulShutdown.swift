import Synchronization

/// The graceful phase of a shutdown, as swift-service-lifecycle has it: before a service's
/// task is cancelled, the service group asks it to finish — stop taking new work, finish the
/// batch in hand, flush its outboxes — and gives it `ServiceGroup.gracefulTimeout` to return
/// from `run()` by itself. A service opts in by running its work inside
/// `withGracefulShutdownHandler(operation:onGracefulShutdown:)`; one that does not is
/// cancelled at once, as before.
public final class GracefulShutdown: Sendable {
    private struct State {
        var triggered = false
        var nextID: UInt64 = 0
        var handlers: [UInt64: @Sendable () -> Void] = [:]
    }

    private let state = Mutex(State())

    /// The graceful shutdown of the service this task runs for, set by `ServiceGroup`.
    @TaskLocal public static var current: GracefulShutdown?

    public init() {}

    /// Whether the group asked for the graceful phase.
    public var isTriggered: Bool { state.withLock { $0.triggered } }

    /// Whether anything waits to be told: a service that registered no handler is cancelled
    /// straight away.
    var hasHandlers: Bool { state.withLock { !$0.handlers.isEmpty } }

    /// Runs every registered handler, once; handlers registered later run at registration.
    public func trigger() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.triggered else { return [] }
            state.triggered = true
            return Array(state.handlers.values)
        }
        for handler in handlers { handler() }
    }

    /// Registers `handler`; nil (and the handler run at once) when the phase has begun.
    func register(_ handler: @escaping @Sendable () -> Void) -> UInt64? {
        let id = state.withLock { state -> UInt64? in
            guard !state.triggered else { return nil }
            state.nextID += 1
            state.handlers[state.nextID] = handler
            return state.nextID
        }
        if id == nil { handler() }
        return id
    }

    func unregister(_ id: UInt64) {
        _ = state.withLock { $0.handlers.removeValue(forKey: id) }
    }
}

/// Runs `operation`; if the service group begins its graceful phase meanwhile, calls
/// `handler` (once, from the thread that triggered it: it should only flip a flag or wake a
/// loop). Outside a service group, just runs `operation`.
public func withGracefulShutdownHandler<T>(
    isolation: isolated (any Actor)? = #isolation,
    operation: () async throws -> T,
    onGracefulShutdown handler: @escaping @Sendable () -> Void
) async rethrows -> T {
    guard let shutdown = GracefulShutdown.current else { return try await operation() }
    let id = shutdown.register(handler)
    defer { if let id { shutdown.unregister(id) } }
    return try await operation()
}
