import CWebSockets
import Foundation
import HTTPRouting
import Lifecycle
import ServiceLogging
import Synchronization

/// The service thread of one ``WebSocketClient``: owns a client-only lws context (no listening
/// port) and its one connection, runs `lws_service`, and is the only code that touches the wsi.
/// Other threads reach it through the shared ``ServiceWaker`` and the connection's ``Outbox``.
///
/// `@unchecked Sendable`: the stored `var`s are read and written only on the service thread
/// (inside `run` and the lws callbacks it triggers); what other threads touch is immutable or
/// behind a `Mutex` (`outbox`, `closeCode`, the waker; `finished` is a `OneShotSignal`).
final class ClientLoop: @unchecked Sendable {
    let target: ClientTarget
    let headers: [String: String]
    let configuration: WebSocketClientConfiguration
    let messages: AsyncThrowingStream<String, any Error>.Continuation
    let logger: Logger
    let waker = ServiceWaker()
    let outbox = Mutex(Outbox())
    /// The code of the server's close frame, once it sent one.
    let closeCode = Mutex<UInt16?>(nil)
    /// Fires when the service thread has finished.
    let finished = OneShotSignal()

    // MARK: Service-thread state

    private var wsi: OpaquePointer?
    private var connectReport: ((Result<Void, WebSocketError>) -> Void)?
    private var inbound: [UInt8] = []
    private var ended = false
    private var closeRequested = false
    private var closeDeadline: ContinuousClock.Instant?
    private var failure: WebSocketError?
    private var scratch: UnsafeMutablePointer<UInt8>
    private var scratchCapacity = 16 * 1024
    /// The frame being written (client frames leave one per write: lws masks each).
    private var run: [WebSocketFrame] = []
    private let pre = Int(cws_pre())

    // MARK: C-owned memory that must outlive the context

    private let protocols: UnsafeMutablePointer<lws_protocols>
    private let protocolName: UnsafeMutablePointer<CChar>

    init(target: ClientTarget, headers: [String: String], configuration: WebSocketClientConfiguration,
         messages: AsyncThrowingStream<String, any Error>.Continuation, logger: Logger) {
        self.target = target
        self.headers = headers
        self.configuration = configuration
        self.messages = messages
        self.logger = logger
        scratch = .allocate(capacity: scratchCapacity)
        protocolName = strdup("zhixi-websocket-client")
        protocols = .allocate(capacity: 2)
        protocols.initialize(repeating: lws_protocols(), count: 2)
        protocols[0].name = UnsafePointer(protocolName)
        protocols[0].callback = clientLoopCallback
        protocols[0].rx_buffer_size = 64 * 1024
    }

    deinit {
        scratch.deallocate()
        protocols.deallocate()
        free(protocolName)
    }

    // MARK: Other threads

    func enqueue(_ frame: WebSocketFrame) -> WebSocketSendResult {
        let (result, wake) = outbox.withLock { box -> (WebSocketSendResult, Bool) in
            guard box.state == .open else { return (.closed, false) }
            guard box.count + 1 <= configuration.maxQueuedMessages, box.bytes + frame.count <= configuration.maxQueuedBytes else {
                return (.overflow, false)
            }
            box.append(frame)
            return (.queued, box.markScheduled())
        }
        if wake { waker.scheduleWrite(connection: 0) }
        return result
    }

    func requestClose(code: UInt16, reason: String) {
        let wake = outbox.withLock { box -> Bool in
            guard box.state == .open else { return false }
            box.state = .closing(code: code, reason: reason)
            return box.markScheduled()
        }
        if wake { waker.requestShutdown() }
    }

    /// Suspends until the service thread has finished (returns at once if it has).
    func waitUntilFinished() async {
        await finished.wait()
    }

    // MARK: Thread body

    /// Creates the context, connects, reports the handshake's outcome through `ready`, then
    /// services the connection until it ends, and destroys the context on this thread.
    func run(ready: @escaping (Result<Void, WebSocketError>) -> Void) {
        connectReport = ready
        var info = lws_context_creation_info()
        info.port = CONTEXT_PORT_NO_LISTEN
        info.protocols = UnsafePointer(protocols)
        info.gid = -1
        info.uid = -1
        info.timeout_secs = UInt32(clamping: max(1, configuration.connectTimeout))
        info.user = Unmanaged.passUnretained(self).toOpaque()
        guard let context = lws_create_context(&info) else {
            report(.failure(WebSocketError(.contextCreationFailed)))
            finish()
            return
        }
        waker.attach(context: context)
        let host = target.host, port = target.port, path = target.path
        let hostHeader = port == 80 ? host : "\(host):\(port)"
        let connected: OpaquePointer? = host.withCString { address in
            path.withCString { path in
                hostHeader.withCString { hostHeader in
                    var connect = lws_client_connect_info()
                    connect.context = context
                    connect.address = address
                    connect.port = Int32(port)
                    connect.path = path
                    connect.host = hostHeader
                    connect.origin = hostHeader
                    connect.local_protocol_name = UnsafePointer(protocolName)
                    return lws_client_connect_via_info(&connect)
                }
            }
        }
        if connected == nil && !ended {
            wsi = nil
            fail(WebSocketError(.connectFailed, context: ["ws.host": host, "ws.port": String(port)], isRetriable: true))
        }
        while !ended {
            if lws_service(context, 0) < 0 { break }
            if let deadline = closeDeadline, ContinuousClock.now >= deadline { break }
        }
        waker.attach(context: nil)
        lws_context_destroy(context)
        wsi = nil
        if !ended { connectionEnded() }
        finish()
    }

    private func report(_ result: Result<Void, WebSocketError>) {
        guard let connectReport else { return }
        self.connectReport = nil
        connectReport(result)
    }

    private func finish() {
        outbox.withLock { $0.markClosed() }
        finished.fire()
    }

    /// The connection could not be made or broke: the handshake waiter or the reader learns why.
    private func fail(_ error: WebSocketError) {
        if failure == nil { failure = error }
        if connectReport != nil {
            report(.failure(error))
            ended = true
            messages.finish(throwing: error)
        } else {
            connectionEnded()
        }
    }

    /// Ends the message stream: normally after a 1000/1001 close or our own close, otherwise with the reason.
    private func connectionEnded() {
        guard !ended else { return }
        ended = true
        outbox.withLock { $0.markClosed() }
        report(.failure(failure ?? WebSocketError(.connectFailed, isRetriable: true)))
        let code = closeCode.withLock { $0 }
        if let failure {
            messages.finish(throwing: failure)
        } else if closeRequested || code == 1000 || code == 1001 {
            messages.finish()
        } else {
            messages.finish(throwing: WebSocketError(.connectionLost, context: ["ws.close_code": code.map(String.init) ?? "none"],
                                                           isRetriable: true))
        }
    }

    // MARK: Callback dispatch

    func handle(_ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
            return appendHeaders(wsi, input, length)
        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
            var context = ["ws.host": target.host, "ws.port": String(target.port)]
            if let input { context["ws.reason"] = String(cString: input.assumingMemoryBound(to: CChar.self)) }
            var code = WebSocketError.Code.connectFailed
            if let wsi, case let status = lws_http_client_http_response(wsi), status > 0 {
                code = .handshakeRefused
                context["http.status"] = String(status)
            } else if context["ws.reason"]?.contains("HS:") == true {
                code = .handshakeRefused
            }
            self.wsi = nil
            fail(WebSocketError(code, context: context, isRetriable: code == .connectFailed))
        case LWS_CALLBACK_CLIENT_ESTABLISHED:
            self.wsi = wsi
            report(.success(()))
        case LWS_CALLBACK_CLIENT_RECEIVE:
            guard let wsi else { return 0 }
            return receive(wsi, input, length)
        case LWS_CALLBACK_CLIENT_WRITEABLE:
            guard let wsi else { return 0 }
            return write(wsi)
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            if let input, length >= 2 {
                let bytes = input.assumingMemoryBound(to: UInt8.self)
                closeCode.withLock { $0 = UInt16(bytes[0]) << 8 | UInt16(bytes[1]) }
            }
        case LWS_CALLBACK_CLIENT_CLOSED:
            self.wsi = nil
            connectionEnded()
        case LWS_CALLBACK_WSI_DESTROY:
            self.wsi = nil
            if connectReport != nil {
                fail(WebSocketError(.connectFailed, context: ["ws.host": target.host, "ws.port": String(target.port)],
                                          isRetriable: true))
            } else {
                connectionEnded()
            }
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            drainInbox()
        default:
            break
        }
        return 0
    }

    /// `Host` and `Origin` come from the connect info; these are the caller's extra headers.
    private func appendHeaders(_ wsi: OpaquePointer?, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        guard let wsi, let input else { return 0 }
        let cursor = input.assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
        guard let start = cursor.pointee else { return 0 }
        let end = start + length
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            let bytes = Array(value.utf8)
            let added = (name.lowercased() + ":").withCString { name in
                lws_add_http_header_by_name(wsi, UnsafeRawPointer(name).assumingMemoryBound(to: UInt8.self), bytes,
                                            Int32(bytes.count), cursor, end)
            }
            if added != 0 { return -1 }
        }
        return 0
    }

    private func receive(_ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        if inbound.count + length > configuration.maxMessageBytes {
            inbound = []
            failure = WebSocketError(.connectionLost, context: ["ws.reason": "message larger than \(configuration.maxMessageBytes) bytes"])
            closeWith(wsi, code: UInt16(LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE.rawValue), reason: "message too large")
            return -1
        }
        if let input, length > 0 { inbound.append(contentsOf: UnsafeRawBufferPointer(start: input, count: length)) }
        guard lws_is_final_fragment(wsi) != 0 else { return 0 }
        let message = inbound
        inbound = []
        guard lws_frame_is_binary(wsi) == 0 else { return 0 }
        if case .dropped = messages.yield(String(decoding: message, as: UTF8.self)) {
            failure = WebSocketError(.receiveOverflow, context: ["ws.limit": String(configuration.maxBufferedMessages)])
            closeWith(wsi, code: UInt16(LWS_CLOSE_STATUS_POLICY_VIOLATION.rawValue), reason: "reader fell behind")
            return -1
        }
        return 0
    }

    /// Writes what is queued while lws holds no unsent bytes; a due close returns -1 after
    /// setting the close frame's code and reason (lws then sends it and awaits the reply).
    private func write(_ wsi: OpaquePointer) -> Int32 {
        for _ in 0..<32 {
            if lws_partial_buffered(wsi) != 0 { break }
            run.removeAll(keepingCapacity: true)
            switch outbox.withLock({ $0.next(canClose: true, maxBytes: 0, into: &run) }) {
            case .idle, .closeDue:
                return 0
            case .close(let code, let reason):
                closeRequested = true
                closeDeadline = ContinuousClock.now + .seconds(configuration.closeGracePeriod)
                let waker = self.waker
                DispatchQueue.global().asyncAfter(deadline: .now() + configuration.closeGracePeriod + 0.05) { waker.poke() }
                closeWith(wsi, code: code, reason: reason)
                return -1
            case .messages(let more):
                let frame = run[0]
                // lws masks a client frame in place: write a copy, the frame stays as it was.
                if pre + frame.count > scratchCapacity {
                    scratch.deallocate()
                    scratchCapacity = max(pre + frame.count, scratchCapacity * 2)
                    scratch = .allocate(capacity: scratchCapacity)
                }
                (scratch + pre).update(from: frame.payload, count: frame.count)
                guard lws_write(wsi, scratch + pre, frame.count, LWS_WRITE_TEXT) >= frame.count else { return -1 }
                if !more { return 0 }
            }
        }
        lws_callback_on_writable(wsi)
        return 0
    }

    private func closeWith(_ wsi: OpaquePointer, code: UInt16, reason: String) {
        var bytes = Array(reason.utf8.prefix(123))
        lws_close_reason(wsi, lws_close_status(rawValue: UInt32(code)), &bytes, bytes.count)
    }

    /// After `lws_cancel_service`: something was queued, or a close was asked for.
    private func drainInbox() {
        let work = waker.takeWork()
        if let wsi {
            if !work.writable.isEmpty || work.shutdownRequested { lws_callback_on_writable(wsi) }
        } else if work.shutdownRequested && connectReport == nil {
            closeRequested = true
            connectionEnded()
        }
    }
}

/// The protocol callback lws calls for every client event; the loop comes from the context's user pointer.
private func clientLoopCallback(_ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                                _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
    guard let wsi, let context = lws_get_context(wsi), let loop = lws_context_user(context) else { return 0 }
    return Unmanaged<ClientLoop>.fromOpaque(loop).takeUnretainedValue().handle(wsi, reason, user, input, length)
}
