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
    @discardableResult
    func complete(with response: HTTPResponse) -> Bool {
        phase.withLock { phase in
            guard case .handling = phase else { return false }
            phase = .responded(response)
            MHD_resume_connection(connection)
            return true
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
