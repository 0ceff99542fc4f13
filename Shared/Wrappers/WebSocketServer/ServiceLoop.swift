import CWebSockets
import Foundation
import HTTPRouting
import Lifecycle
import ServiceLogging
import Synchronization

/// The service thread: owns the lws context, runs `lws_service`, and is the only code that
/// touches a wsi. Other threads reach it only through ``ServiceWaker``.
///
/// `@unchecked Sendable`: the stored `var`s are read and written only on the service thread
/// (inside `run` and the lws callbacks it triggers); everything shared with other threads is
/// either immutable or behind a `Mutex` (`waker`, `finished`, `failure`, each connection's outbox).
final class ServiceLoop: @unchecked Sendable {
    let configuration: WebSocketServerConfiguration
    let delegate: any WebSocketServerDelegate
    let router: Router?
    let logger: Logger
    let waker = ServiceWaker()
    /// The router's tasks for plain HTTP requests; the server waits for them once the thread ended.
    let dispatches = TaskSet()
    /// "epoll" or "poll" once the context exists.
    let eventLoopName = Mutex<String?>(nil)

    /// Completion of the thread, for `shutdown()`/`run()` waiters.
    let finished = OneShotSignal()
    /// Why the thread ended, if it failed (set before `finished` fires).
    let failure = Mutex<WebSocketError?>(nil)

    // MARK: Service-thread state

    var context: OpaquePointer?
    var connections: [OpaquePointer: LiveConnection] = [:]
    var wsiByConnection: [UInt64: OpaquePointer] = [:]
    var pendingUpgrades: [OpaquePointer: WebSocketUpgradeRequest] = [:]
    var httpExchanges: [OpaquePointer: HTTPExchange] = [:]
    var wsiByExchange: [UInt64: OpaquePointer] = [:]
    var nextID: UInt64 = 0
    var draining = false
    var drainDeadline = ContinuousClock.now

    /// WebSocket messages written to sockets, and the `lws_write` calls that carried them.
    let messagesWritten = Atomic<Int>(0)
    let messageWrites = Atomic<Int>(0)

    /// The frames of one socket being written together (``flush(_:_:inWriteable:)``); kept
    /// to reuse its storage.
    var run: [WebSocketFrame] = []

    /// Write buffer with `LWS_PRE` bytes of headroom, grown on demand.
    private(set) var scratch: UnsafeMutablePointer<UInt8>
    private(set) var scratchCapacity: Int
    let pre = Int(cws_pre())

    // MARK: C-owned memory that must outlive the context

    private let protocols: UnsafeMutablePointer<lws_protocols>
    private let protocolName: UnsafeMutablePointer<CChar>
    private let retryPolicy: UnsafeMutablePointer<lws_retry_bo_t>
    private let hostName: UnsafeMutablePointer<CChar>?
    private let vhostName: UnsafeMutablePointer<CChar>

    init(configuration: WebSocketServerConfiguration, delegate: any WebSocketServerDelegate, router: Router?, logger: Logger) {
        self.configuration = configuration
        self.delegate = delegate
        self.router = router
        self.logger = logger
        scratchCapacity = 64 * 1024
        scratch = .allocate(capacity: scratchCapacity)
        protocolName = strdup("zhixi-websocket")
        vhostName = strdup("websocket-server")
        let host = configuration.host.flatMap { $0.isEmpty || $0 == "0.0.0.0" || $0 == "::" ? nil : $0 }
        hostName = host.map { strdup($0) }
        protocols = .allocate(capacity: 2)
        protocols.initialize(repeating: lws_protocols(), count: 2)
        protocols[0].name = UnsafePointer(protocolName)
        protocols[0].callback = serviceLoopCallback
        protocols[0].per_session_data_size = 0
        protocols[0].rx_buffer_size = 64 * 1024
        retryPolicy = .allocate(capacity: 1)
        retryPolicy.initialize(to: lws_retry_bo_t())
        retryPolicy.pointee.secs_since_valid_ping = UInt16(clamping: max(1, configuration.pingInterval))
        retryPolicy.pointee.secs_since_valid_hangup = UInt16(clamping: max(configuration.pingInterval + 1, configuration.idleTimeout))
    }

    deinit {
        scratch.deallocate()
        protocols.deallocate()
        retryPolicy.deallocate()
        free(protocolName)
        free(vhostName)
        if let hostName { free(hostName) }
    }

    /// Makes sure `scratch` holds `LWS_PRE + count` bytes.
    func reserveScratch(_ count: Int) {
        guard pre + count > scratchCapacity else { return }
        scratch.deallocate()
        scratchCapacity = max(pre + count, scratchCapacity * 2)
        scratch = .allocate(capacity: scratchCapacity)
    }

    /// The most bytes of request line and headers a request may carry.
    static let maxHeaderBytes: UInt16 = 8 * 1024

    // MARK: Thread body

    /// Creates the context and vhost, reports the bound port (or the failure), then services
    /// until shutdown has drained every connection, and destroys the context on this thread.
    func run(ready: (Result<Int, WebSocketError>) -> Void) {
        var info = lws_context_creation_info()
        info.options = cws_server_options(hostName.map { strchr($0, 0x3A) == nil ? 1 : 0 } ?? 0)
        info.gid = -1
        info.uid = -1
        info.user = Unmanaged.passUnretained(self).toOpaque()
        // The request line and headers a connection may send (lws's default is 4 KB, and the
        // vhost's own setting does not raise the context's header pool).
        info.max_http_header_data = Self.maxHeaderBytes
        // epoll through lws's libev plugin on a loop of our own, when the host has it;
        // otherwise (or if lws refuses it) lws's built-in poll() loop.
        var eventLoop: (ev: cws_ev, loop: UnsafeMutableRawPointer)?
        var context: OpaquePointer?
        if configuration.eventLoop == .automatic, let epoll = Self.openEpollLoop() {
            var foreign: [UnsafeMutableRawPointer?] = [epoll.loop]
            var evInfo = info
            evInfo.options |= cws_option_libev()
            context = foreign.withUnsafeMutableBufferPointer { loops in
                evInfo.foreign_loops = loops.baseAddress
                return lws_create_context(&evInfo)
            }
            if context != nil {
                eventLoop = epoll
            } else {
                epoll.ev.loop_destroy(epoll.loop)
                logger.warning("libwebsockets refused the libev event loop; using poll()")
            }
        }
        if context == nil { context = lws_create_context(&info) }
        guard let context else {
            ready(.failure(WebSocketError(.contextCreationFailed)))
            finish(failure: nil)
            return
        }
        eventLoopName.withLock { $0 = eventLoop == nil ? "poll" : "epoll" }
        var vhostInfo = lws_context_creation_info()
        vhostInfo.port = Int32(configuration.port)
        vhostInfo.iface = hostName.map { UnsafePointer($0) }
        vhostInfo.vhost_name = UnsafePointer(vhostName)
        vhostInfo.protocols = UnsafePointer(protocols)
        vhostInfo.retry_and_idle_policy = UnsafePointer(retryPolicy)
        vhostInfo.max_http_header_data = Self.maxHeaderBytes
        vhostInfo.options = info.options
        guard let vhost = lws_create_vhost(context, &vhostInfo) else {
            lws_context_destroy(context)
            if let eventLoop { eventLoop.ev.loop_destroy(eventLoop.loop) }
            ready(.failure(WebSocketError(.listenFailed, context: [
                "ws.host": configuration.host ?? "*", "ws.port": String(configuration.port),
            ], isRetriable: true)))
            finish(failure: nil)
            return
        }
        self.context = context
        waker.attach(context: context)
        let port = Int(lws_get_vhost_listen_port(vhost))
        ready(.success(port))

        var failure: WebSocketError?
        // lws 4.1's libev plugin re-arms its timer with ev_timer_set on a watcher that may
        // still be active, which libev ignores: a timer due earlier than the one armed
        // (a ping, a timeout) then waits for the next socket event. A regular wake makes
        // lws service its due timers at least this often.
        let ticker: (any DispatchSourceTimer)? = eventLoop == nil ? nil : {
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.schedule(deadline: .now() + Self.timerTick, repeating: Self.timerTick, leeway: .milliseconds(20))
            timer.setEventHandler { [waker] in waker.poke() }
            timer.resume()
            return timer
        }()
        defer { ticker?.cancel() }
        while true {
            if let eventLoop {
                // Waits for at least one event; lws's watchers, timers and idle work run inside.
                _ = withUnsafePointer(to: eventLoop.ev) { cws_ev_run_once($0, eventLoop.loop) }
            } else if lws_service(context, 0) < 0 {
                failure = WebSocketError(.serviceFailed, context: ["ws.reason": "lws_service failed"], isRetriable: true)
                break
            }
            if draining && (connections.isEmpty || ContinuousClock.now >= drainDeadline) { break }
        }
        waker.attach(context: nil)
        lws_context_destroy(context)
        if let eventLoop { eventLoop.ev.loop_destroy(eventLoop.loop) }
        self.context = nil
        // Anything lws did not report as closed while being destroyed is closed now.
        for live in connections.values { connectionDidClose(live) }
        connections = [:]
        wsiByConnection = [:]
        pendingUpgrades = [:]
        httpExchanges = [:]
        wsiByExchange = [:]
        finish(failure: failure)
    }

    /// Longest delay of an lws timer (ping, timeout) on the epoll loop.
    static let timerTick: DispatchTimeInterval = .milliseconds(100)

    /// libev (opened once per process) and a new epoll loop, or nil when the host lacks libev
    /// or lws's libev plugin.
    static func openEpollLoop() -> (ev: cws_ev, loop: UnsafeMutableRawPointer)? {
        guard let ev = libev, let loop = withUnsafePointer(to: ev, { cws_ev_loop_new_epoll($0) }) else { return nil }
        return (ev, loop)
    }

    private static let libev: cws_ev? = {
        var ev = cws_ev()
        guard cws_ev_open(&ev) == 0, cws_evlib_plugin_present() != 0 else { return nil }
        return ev
    }()

    private func finish(failure: WebSocketError?) {
        self.failure.withLock { $0 = failure }
        finished.fire()
    }

    /// Suspends until the service thread has finished (returns at once if it has).
    func waitUntilFinished() async {
        await finished.wait()
    }

    // MARK: Callback dispatch

    func handle(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
            return confirmUpgrade(wsi, protocol: input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "")
        case LWS_CALLBACK_ESTABLISHED:
            connectionEstablished(wsi)
        case LWS_CALLBACK_RECEIVE:
            return receive(wsi, input, length)
        case LWS_CALLBACK_SERVER_WRITEABLE:
            return writeWebSocket(wsi)
        case LWS_CALLBACK_CLOSED:
            if let live = connections[wsi] { connectionDidClose(live) }
        case LWS_CALLBACK_HTTP:
            return beginHTTP(wsi)
        case LWS_CALLBACK_HTTP_BODY:
            return receiveHTTPBody(wsi, input, length)
        case LWS_CALLBACK_HTTP_BODY_COMPLETION:
            return completeHTTPBody(wsi)
        case LWS_CALLBACK_HTTP_WRITEABLE:
            return writeHTTP(wsi)
        case LWS_CALLBACK_CLOSED_HTTP:
            forgetExchange(wsi)
        case LWS_CALLBACK_WSI_DESTROY:
            forgetExchange(wsi)
            pendingUpgrades[wsi] = nil
            if let live = connections[wsi] { connectionDidClose(live) }
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            drainInbox()
        default:
            return lws_callback_http_dummy(wsi, reason, user, input, length)
        }
        return 0
    }

    /// Runs on the service thread after `lws_cancel_service`: acts on what other threads queued.
    private func drainInbox() {
        let work = waker.takeWork()
        for id in work.writable {
            guard let wsi = wsiByConnection[id], let live = connections[wsi] else { continue }
            _ = flush(wsi, live, inWriteable: false)
        }
        for (id, response) in work.httpResponses {
            guard let wsi = wsiByExchange[id], let exchange = httpExchanges[wsi], exchange.id == id else { continue }
            exchange.response = response
            lws_callback_on_writable(wsi)
        }
        if work.shutdownRequested && !draining { beginDrain() }
    }

    /// Closes every connection with 1001 and lets `run` leave its loop once they are gone.
    private func beginDrain() {
        draining = true
        drainDeadline = ContinuousClock.now + .seconds(configuration.shutdownGracePeriod)
        logger.info("websocket server shutting down", metadata: ["ws.connections": String(connections.count)])
        for (wsi, live) in connections {
            live.connection.outbox.withLock { $0.forceClose(code: 1001, reason: "server shutting down") }
            lws_callback_on_writable(wsi)
        }
        // lws sleeps until the next event; make sure the loop re-checks the deadline.
        let waker = self.waker
        DispatchQueue.global().asyncAfter(deadline: .now() + configuration.shutdownGracePeriod + 0.05) {
            waker.poke()
        }
    }
}

/// The protocol callback lws calls for every event; the loop comes from the context's user pointer.
private func serviceLoopCallback(_ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                                 _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
    guard let wsi, let context = lws_get_context(wsi), let loop = lws_context_user(context) else { return 0 }
    return Unmanaged<ServiceLoop>.fromOpaque(loop).takeUnretainedValue().handle(wsi, reason, user, input, length)
}
