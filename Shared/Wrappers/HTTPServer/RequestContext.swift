import CMicroHTTPD
import HTTPRouting
import Synchronization

/// Per-request state, created on the first access-handler call of a request and handed to
/// libmicrohttpd as `*con_cls` with a +1 retain (`Unmanaged.passRetained`); the
/// request-completed callback takes that retain back on every termination path.
///
/// `@unchecked Sendable`: the receive-phase fields (`request`, `receivedBytes`, `overflowBytes`,
/// `isTooLarge`) are only touched by the MHD polling thread, which calls the access handler
/// serially for a connection, and only before the request is dispatched (the handler task gets
/// an immutable `HTTPRequest` copy). State shared with the handler task lives in `phase`,
/// a `Mutex`. `connection` is an immutable pointer that MHD keeps valid until the
/// request-completed callback, and it is only used for `MHD_resume_connection` while the
/// connection is suspended (under `phase`'s lock, see `complete(with:)`).
final class RequestContext: @unchecked Sendable {
    enum Phase {
        /// Headers or body still arriving; only the MHD thread looks at the context.
        case receiving
        /// Connection suspended, a handler task is running.
        case handling
        /// The response is ready and the connection resumed; the next access-handler call queues it.
        case responded(HTTPResponse)
        /// The response was handed to libmicrohttpd.
        case queued
    }

    let connection: OpaquePointer
    let startedAt: ContinuousClock.Instant
    /// `nil` when the method is not one the server supports.
    let method: HTTPMethod?
    let methodName: String
    var request: HTTPRequest
    var receivedBytes = 0
    var overflowBytes = 0
    var isTooLarge = false
    /// The body of a streaming route, read by the handler while it arrives. Set on the MHD
    /// thread before the handler is dispatched (at the headers), never changed afterwards.
    var stream: HTTPBodyStream?
    /// Calls without data in a row while a streamed body with a declared length is still short
    /// of it (the daemon's thread only); see `ServerCore.requestComplete`.
    var emptyBodyCalls = 0
    private let phase = Mutex<Phase>(.receiving)

    init(connection: OpaquePointer, methodName: String, path: String) {
        self.connection = connection
        self.startedAt = .now
        self.methodName = methodName
        self.method = HTTPMethod(rawValue: methodName)
        self.request = HTTPRequest(method: method ?? .get, path: path)
    }

    var isHandling: Bool {
        phase.withLock { if case .handling = $0 { true } else { false } }
    }

    var isAwaitingResponse: Bool {
        phase.withLock { if case .receiving = $0 { true } else { false } }
    }

    /// Marks the context as dispatched; call before `MHD_suspend_connection`.
    func beginHandling() {
        phase.withLock { $0 = .handling }
    }

    /// Stores the response and resumes the connection, unless someone else (the shutdown path)
    /// already answered. Returns whether this call delivered the response.
    ///
    /// `MHD_resume_connection` runs under the lock so that a shutdown which inspected this
    /// context afterwards knows the resume call has returned before it stops the daemon.
    ///
    /// A streaming request's connection is suspended only while the server waits for the reader
    /// (backpressure) or, its body complete, for this response (`suspendUntilAnswered`); the
    /// stream resumes it in the first case, this call in the second.
    @discardableResult
    func complete(with response: HTTPResponse) -> Bool {
        phase.withLock { phase in
            guard case .handling = phase else { return false }
            phase = .responded(response)
            if let stream {
                stream.answer()
                if awaitingAnswer {
                    awaitingAnswer = false
                    MHD_resume_connection(connection)
                }
            } else {
                MHD_resume_connection(connection)
            }
            return true
        }
    }

    /// Guarded by `phase`'s lock: a streaming request's body is complete and its connection is
    /// suspended until the handler answers.
    private var awaitingAnswer = false

    /// Call (3) of a streaming request: the response if the handler already answered (to queue
    /// now); otherwise the connection is suspended until it does.
    func suspendUntilAnswered() -> HTTPResponse? {
        phase.withLock { phase in
            if case .responded(let response) = phase {
                phase = .queued
                return response
            }
            guard case .handling = phase, !awaitingAnswer else { return nil }
            awaitingAnswer = true
            MHD_suspend_connection(connection)
            return nil
        }
    }

    /// The response stored by `complete(with:)`, at most once.
    func takeResponse() -> HTTPResponse? {
        phase.withLock { phase in
            guard case .responded(let response) = phase else { return nil }
            phase = .queued
            return response
        }
    }

    func markQueued() {
        phase.withLock { $0 = .queued }
    }
}
