import Foundation
import HTTPRouting
import Lifecycle
import ServiceLogging
import Synchronization

/// A WebSocket server, with plain HTTP on the same port, over libwebsockets.
///
/// One dedicated service thread owns the lws context: it accepts, upgrades, reads, writes and
/// closes every socket, and calls the delegate. Other threads only queue outgoing messages
/// (``WebSocketConnection/send(_:)``) and wake it. Requests that are not upgrades go to the
/// `httpRouter` (run in a task; the response is written back by the service thread), or get a
/// 404 JSON error when there is no router.
public final class WebSocketServer: Sendable {
    public let configuration: WebSocketServerConfiguration
    private let loop: ServiceLoop
    private let logger: Logger
    private let state = Mutex(State.idle)

    private enum State {
        case idle
        case running(port: Int)
        case stopped(started: Bool)
    }

    public init(configuration: WebSocketServerConfiguration, delegate: any WebSocketServerDelegate,
                httpRouter: Router?, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.loop = ServiceLoop(configuration: configuration, delegate: delegate, router: httpRouter, logger: logger)
    }

    /// The bound port (the ephemeral one when configured with `0`), or `configuration.port` before `start()`.
    public var port: Int {
        state.withLock { state in
            if case .running(let port) = state { return port }
            return configuration.port
        }
    }

    /// The event loop in use once started: "epoll" or "poll" (nil before `start()`).
    public var eventLoop: String? { loop.eventLoopName.withLock { $0 } }

    /// WebSocket messages written to sockets so far, and the writes (`send()` calls) that
    /// carried them: several queued messages of one socket leave in one write
    /// (``WebSocketServerConfiguration/coalescedWriteBytes``).
    public var writeCounts: (messages: Int, writes: Int) {
        (loop.messagesWritten.load(ordering: .relaxed), loop.messageWrites.load(ordering: .relaxed))
    }

    /// Binds the port and starts the service thread; returns once the server accepts connections.
    public func start() throws(WebSocketError) {
        try state.withLock { state throws(WebSocketError) in
            guard case .idle = state else { throw WebSocketError(.invalidState, context: ["ws.reason": "already started"]) }
            LWSLog.install(logger)
            let ready = Mutex<Result<Int, WebSocketError>?>(nil)
            let started = DispatchSemaphore(value: 0)
            let loop = self.loop
            let thread = Thread {
                loop.run { result in
                    ready.withLock { $0 = result }
                    started.signal()
                }
            }
            thread.name = "websocket-service"
            thread.start()
            started.wait()
            switch ready.withLock({ $0 }) {
            case .success(let port):
                state = .running(port: port)
            case .failure(let error):
                state = .stopped(started: false)
                throw error
            case nil:
                state = .stopped(started: false)
                throw WebSocketError(.contextCreationFailed)
            }
        }
        logger.info("websocket server listening", metadata: [
            "ws.port": String(port), "ws.path": configuration.path, "ws.host": configuration.host ?? "*",
            "ws.event_loop": eventLoop ?? "",
        ])
    }

    /// Starts if needed and serves until the task is cancelled (then shuts down), or until
    /// `shutdown()` is called elsewhere. Throws if the service loop failed.
    public func run() async throws {
        if case .idle = state.withLock({ $0 }) { try start() }
        await withTaskCancellationHandler {
            await loop.waitUntilFinished()
        } onCancel: {
            loop.waker.requestShutdown()
        }
        await loop.dispatches.shutdown()
        state.withLock { $0 = .stopped(started: true) }
        if let failure = loop.failure.withLock({ $0 }) { throw failure }
    }

    /// Closes every WebSocket with 1001 (going away), waits for the close handshakes up to the
    /// grace period, stops the service thread and destroys the lws context, then cancels the
    /// HTTP requests' tasks still running and waits for them. Idempotent.
    public func shutdown() async {
        let started = state.withLock { state -> Bool in
            switch state {
            case .idle, .stopped(started: false):
                state = .stopped(started: false)
                return false
            case .running, .stopped(started: true):
                state = .stopped(started: true)
                return true
            }
        }
        guard started else { return }
        loop.waker.requestShutdown()
        await loop.waitUntilFinished()
        await loop.dispatches.shutdown()
        logger.info("websocket server stopped")
    }
}
