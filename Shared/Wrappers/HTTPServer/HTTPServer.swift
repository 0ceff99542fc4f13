import Dispatch
import HTTPRouting
import Lifecycle
import ServiceLogging
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd: one epoll thread does all socket work; each fully
/// received request is handed to an async handler while its connection is suspended.
///
/// ```swift
/// let server = HTTPServer(configuration: .init(port: 8080), router: router, logger: logger)
/// try await server.run()   // until the task is cancelled, then drains gracefully
/// ```
public final class HTTPServer: Sendable {
    private enum Lifecycle: Sendable {
        case idle
        case running(MicroHTTPDaemon)
        case stopping(MicroHTTPDaemon)
        case stopped
    }

    public let configuration: HTTPServerConfiguration
    private let core: ServerCore
    private let lifecycle = Mutex(Lifecycle.idle)
    private let boundPort = Mutex<Int?>(nil)
    /// Fired by `shutdown` or cancellation; `run()` waits on it.
    private let stopRequested = OneShotSignal()
    /// Fired once the daemon has stopped; concurrent `shutdown` calls wait on it.
    private let stopped = OneShotSignal()
    private let stopQueue = DispatchQueue(label: "http-server.stop")

    /// A server answering through a `Router` (which renders unmatched routes as 404/405 JSON).
    /// A router with streaming routes gets a connection pool of at least
    /// `HTTPServerConfiguration.streamingConnectionMemoryBytes`.
    /// - Parameter onResponse: called after each response with the request, the response and the
    ///   time from receiving the headers to the response being ready (for metrics).
    public convenience init(configuration: HTTPServerConfiguration, router: Router, logger: Logger,
                            onResponse: (@Sendable (HTTPRequest, HTTPResponse, Duration) -> Void)? = nil) {
        var configuration = configuration
        if router.hasStreamingRoutes {
            configuration.connectionMemoryBytes = max(configuration.connectionMemoryBytes,
                                                      HTTPServerConfiguration.streamingConnectionMemoryBytes)
        }
        self.init(configuration: configuration, logger: logger, onResponse: onResponse,
                  resolve: { router.resolve(&$0) }) { request in
            await router.respond(to: request)
        }
    }

    /// A server answering every request with `handler`. A thrown `HTTPError` becomes its JSON
    /// response; any other error a 500 `INTERNAL` that reveals nothing of the cause.
    /// - Parameter resolve: called once the headers are in, to find the request's route
    ///   (`Router.resolve`); a request whose `route` then streams its body is dispatched at once.
    public init(configuration: HTTPServerConfiguration, logger: Logger,
                onResponse: (@Sendable (HTTPRequest, HTTPResponse, Duration) -> Void)? = nil,
                resolve: (@Sendable (inout HTTPRequest) -> Void)? = nil,
                handler: @escaping HTTPHandler) {
        var logger = logger
        logger[metadataKey: "http.host"] = configuration.host
        self.configuration = configuration
        self.core = ServerCore(configuration: configuration, logger: logger, handler: handler, onResponse: onResponse,
                               resolve: resolve)
    }

    deinit {
        // Nobody can be awaiting `shutdown` here; stop without a grace period.
        let daemon = lifecycle.withLock { lifecycle -> MicroHTTPDaemon? in
            switch lifecycle {
            case .running(let daemon), .stopping(let daemon): daemon
            case .idle, .stopped: nil
            }
        }
        if let daemon {
            daemon.quiesce()
            core.abandonSuspended()
            daemon.stop()
        }
    }

    /// The bound port once started (the real one when configured with port 0; it stays readable
    /// after shutdown); before `start()`, the configured port.
    public var port: Int {
        boundPort.withLock { $0 } ?? configuration.port
    }

    /// Whether the server is accepting connections (started and not shutting down).
    public var isRunning: Bool {
        lifecycle.withLock { lifecycle in
            if case .running = lifecycle { true } else { false }
        }
    }

    /// Binds and starts serving. Calling it on a running server does nothing.
    public func start() throws(HTTPServerError) {
        try lifecycle.withLock { (lifecycle: inout Lifecycle) throws(HTTPServerError) in
            switch lifecycle {
            case .running:
                return
            case .stopping, .stopped:
                throw HTTPServerError(.alreadyShutDown, message: "a server cannot be restarted after shutdown",
                                      host: configuration.host, port: configuration.port)
            case .idle:
                let daemon = try MicroHTTPDaemon(core: core)
                lifecycle = .running(daemon)
                boundPort.withLock { $0 = daemon.port }
                core.logger.info("http server listening", metadata: ["http.port": String(daemon.port)])
            }
        }
    }

    /// Starts if needed, serves until the calling task is cancelled (or `shutdown` is called),
    /// then shuts down with the configured grace period.
    public func run() async throws {
        try start()
        await withTaskCancellationHandler {
            await stopRequested.wait()
        } onCancel: {
            stopRequested.fire()
        }
        await shutdown(gracePeriod: configuration.shutdownGracePeriod)
    }

    /// Stops accepting connections at once (new ones are refused), lets requests in flight finish
    /// and their responses go out for up to `gracePeriod`, answers any still running with 503
    /// `SHUTTING_DOWN` (their handlers are cancelled and waited for), then closes every
    /// connection. Requests arriving meanwhile on open keep-alive connections get 503
    /// `SHUTTING_DOWN`. Safe to call more than once.
    public func shutdown(gracePeriod: Duration) async {
        enum Action { case drain(MicroHTTPDaemon), waitForOther, done }
        let action = lifecycle.withLock { lifecycle -> Action in
            switch lifecycle {
            case .idle:
                lifecycle = .stopped
                return .done
            case .running(let daemon):
                lifecycle = .stopping(daemon)
                return .drain(daemon)
            case .stopping:
                return .waitForOther
            case .stopped:
                return .done
            }
        }
        stopRequested.fire()
        guard case .drain(let daemon) = action else {
            if case .done = action { stopped.fire() }
            await stopped.wait()
            return
        }
        let logger = core.logger
        core.beginDraining()
        daemon.quiesce()
        logger.info("http server draining", metadata: ["http.in_flight": String(core.inFlight)])
        if await !core.waitUntilIdle(timeout: gracePeriod) {
            let abandoned = core.abandonSuspended()
            logger.warning("grace period over: answering unfinished requests with 503",
                           metadata: ["http.abandoned": String(abandoned)])
            _ = await core.waitUntilIdle(timeout: .milliseconds(500))
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            stopQueue.async {
                daemon.stop()
                continuation.resume()
            }
        }
        // Handlers still running were answered 503 above; they are cancelled and waited for, so
        // none outlives the server.
        await core.handlers.shutdown()
        lifecycle.withLock { $0 = .stopped }
        logger.info("http server stopped")
        stopped.fire()
    }
}
