import CMicroHTTPD
import Dispatch
import HTTPRouting
import Lifecycle
import ServiceLogging
import Synchronization

/// The state libmicrohttpd's callbacks work on: the handler, limits, the count of requests in
/// flight, the handler tasks and the requests whose connections are suspended. Passed to the daemon as an
/// unretained context; the daemon handle keeps it alive for as long as callbacks can arrive.
final class ServerCore: Sendable {
    enum Mode: Sendable {
        /// Normal operation.
        case serving
        /// Shutdown began: the listen socket is closed, new requests get 503, responses close their connection.
        case draining
        /// The grace period ran out: handlers still running were answered with 503.
        case forcing
    }

    private struct State {
        var mode: Mode = .serving
        /// Requests that have a context (from the first access-handler call to the completed callback).
        var inFlight = 0
        /// Contexts whose connection is suspended while a handler task runs.
        var suspended: [ObjectIdentifier: RequestContext] = [:]
        /// A shutdown waiting for `inFlight` to reach zero, tagged so a stale timer cannot wake a later wait.
        var idleWaiter: (id: Int, continuation: CheckedContinuation<Bool, Never>)?
        var nextWaiterID = 0
    }

    let configuration: HTTPServerConfiguration
    let logger: Logger
    let handler: HTTPHandler
    let onResponse: (@Sendable (HTTPRequest, HTTPResponse, Duration) -> Void)?
    /// Finds a request's route once its headers are in (`Router.resolve`): `HTTPRequest.route`
    /// tells whether it reads its body while it arrives (`Router.streaming`).
    let resolve: (@Sendable (inout HTTPRequest) -> Void)?
    let limiter: ConcurrencyLimiter
    /// The handler tasks of dispatched requests, awaited when the server stops.
    let handlers = TaskSet()
    private let state = Mutex(State())

    init(configuration: HTTPServerConfiguration, logger: Logger, handler: @escaping HTTPHandler,
         onResponse: (@Sendable (HTTPRequest, HTTPResponse, Duration) -> Void)?,
         resolve: (@Sendable (inout HTTPRequest) -> Void)? = nil) {
        self.configuration = configuration
        self.logger = logger
        self.handler = handler
        self.onResponse = onResponse
        self.resolve = resolve
        self.limiter = ConcurrencyLimiter(limit: configuration.maxConcurrentRequests)
    }

    var mode: Mode { state.withLock { $0.mode } }
    var inFlight: Int { state.withLock { $0.inFlight } }

    // MARK: - Request bookkeeping (MHD polling thread)

    /// Counts a new request; returns the current mode so the caller can refuse it.
    func requestStarted() -> Mode {
        state.withLock { state in
            state.inFlight += 1
            return state.mode
        }
    }

    func requestFinished() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            state.inFlight -= 1
            guard state.inFlight == 0, state.mode != .serving else { return nil }
            defer { state.idleWaiter = nil }
            return state.idleWaiter?.continuation
        }
        waiter?.resume(returning: true)
    }

    /// Registers a context as suspended; refused once shutdown is forcing.
    func registerSuspended(_ context: RequestContext) -> Bool {
        state.withLock { state in
            guard state.mode != .forcing else { return false }
            state.suspended[ObjectIdentifier(context)] = context
            return true
        }
    }

    func unregisterSuspended(_ context: RequestContext) {
        _ = state.withLock { $0.suspended.removeValue(forKey: ObjectIdentifier(context)) }
    }

    // MARK: - Handler tasks

    /// Runs the handler for a suspended request and resumes the connection with its response.
    func handle(_ request: HTTPRequest, context: RequestContext) async {
        await limiter.acquire()
        guard context.isHandling else {
            // Shutdown already answered this request while it waited for a slot.
            limiter.release()
            unregisterSuspended(context)
            return
        }
        let response: HTTPResponse
        do {
            response = try await handler(request)
        } catch let error as HTTPError {
            response = error.response
        } catch {
            logger.error("handler failed", metadata: [
                "http.method": request.method.rawValue, "http.path": request.path, "error": String(describing: error),
            ])
            response = HTTPError.internalError.response
        }
        limiter.release()
        // Observed before the connection resumes, so a client that has its response can rely on
        // the observation having happened (a shutdown racing this could answer 503 instead).
        if context.isHandling {
            onResponse?(request, response, context.startedAt.duration(to: .now))
        }
        context.complete(with: response)
        unregisterSuspended(context)
    }

    // MARK: - Shutdown

    /// Switches to draining: new requests are answered 503 and responses close their connection.
    func beginDraining() {
        state.withLock { if $0.mode == .serving { $0.mode = .draining } }
    }

    /// Waits until no request is in flight, or `timeout` passes. Returns whether it drained.
    func waitUntilIdle(timeout: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let (idleNow, id, replaced) = state.withLock { state -> (Bool, Int, CheckedContinuation<Bool, Never>?) in
                if state.inFlight == 0 { return (true, 0, nil) }
                let replaced = state.idleWaiter?.continuation
                state.nextWaiterID += 1
                state.idleWaiter = (state.nextWaiterID, continuation)
                return (false, state.nextWaiterID, replaced)
            }
            replaced?.resume(returning: false)
            if idleNow {
                continuation.resume(returning: true)
                return
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout.timeInterval) { [self] in
                let expired = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                    guard let waiter = state.idleWaiter, waiter.id == id else { return nil }
                    state.idleWaiter = nil
                    return waiter.continuation
                }
                expired?.resume(returning: false)
            }
        }
    }

    /// Answers every request whose handler is still running with 503 and resumes its connection,
    /// so that no connection is suspended when the daemon stops. Returns how many were abandoned.
    @discardableResult
    func abandonSuspended() -> Int {
        let contexts = state.withLock { state -> [RequestContext] in
            state.mode = .forcing
            defer { state.suspended = [:] }
            return Array(state.suspended.values)
        }
        var abandoned = 0
        let response = Self.shuttingDown.response
        for context in contexts where context.complete(with: response) {
            abandoned += 1
            // `request` is no longer mutated once a context is dispatched.
            onResponse?(context.request, response, context.startedAt.duration(to: .now))
        }
        return abandoned
    }

    static let shuttingDown = HTTPError(.serviceUnavailable, code: "SHUTTING_DOWN", message: "the server is shutting down")
}
