import Synchronization

/// One accepted WebSocket connection.
///
/// `send` and `close` may be called from any thread: they only touch this connection's
/// bounded outgoing queue and wake the service thread, which does every socket write.
/// A ``WebSocketFrame`` sent to many connections is queued by reference on each.
public final class WebSocketConnection: Sendable, Hashable, CustomStringConvertible {
    /// Unique for the life of the server process.
    public let id: UInt64
    /// The upgrade request that opened this connection.
    public let request: WebSocketUpgradeRequest

    let outbox: Mutex<Outbox>
    private let maxQueuedMessages: Int
    private let maxQueuedBytes: Int
    private let waker: ServiceWaker

    init(id: UInt64, request: WebSocketUpgradeRequest, maxQueuedMessages: Int, maxQueuedBytes: Int, waker: ServiceWaker) {
        self.id = id
        self.request = request
        self.maxQueuedMessages = maxQueuedMessages
        self.maxQueuedBytes = maxQueuedBytes
        self.waker = waker
        self.outbox = Mutex(Outbox())
    }

    /// Queues a text message. Never blocks and never grows the queue past its bounds.
    @discardableResult
    public func send(_ text: String) -> WebSocketSendResult {
        send(WebSocketFrame(text: text))
    }

    /// Queues a shared frame (the same frame may be queued on any number of connections) and
    /// wakes the service thread if this connection was idle.
    @discardableResult
    public func send(_ frame: WebSocketFrame) -> WebSocketSendResult {
        let (result, wake) = enqueue(frame)
        if wake { waker.scheduleWrite(connection: id) }
        return result
    }

    /// Queues a shared frame like ``send(_:)-(WebSocketFrame)``, but leaves the wake to `batch`:
    /// a caller that queues on many connections wakes the service thread once, with
    /// ``WebSocketSendBatch/flush()``, instead of up to once per connection.
    @discardableResult
    public func send(_ frame: WebSocketFrame, batch: inout WebSocketSendBatch) -> WebSocketSendResult {
        let (result, wake) = enqueue(frame)
        if wake { batch.add(id, waker: waker) }
        return result
    }

    /// Appends under the lock; true in the second value if the service thread must be told.
    private func enqueue(_ frame: WebSocketFrame) -> (WebSocketSendResult, Bool) {
        outbox.withLock { box -> (WebSocketSendResult, Bool) in
            guard box.state == .open else { return (.closed, false) }
            guard box.count + 1 <= maxQueuedMessages, box.bytes + frame.count <= maxQueuedBytes else {
                return (.overflow, false)
            }
            box.append(frame)
            return (.queued, box.markScheduled())
        }
    }

    /// Queues `finalText` (even past the bounds) after whatever is already queued, sends it,
    /// then closes with `code` and `reason`. Later `send` calls return `.closed`.
    /// Codes that may not be sent on the wire (1004–1006, 1015, < 1000, ≥ 5000) become 1000.
    public func close(after finalText: String? = nil, code: UInt16 = 1000, reason: String = "") {
        let code = Self.isSendable(closeCode: code) ? code : 1000
        let frame = finalText.map { WebSocketFrame(text: $0) }
        let wake = outbox.withLock { box -> Bool in
            guard box.state == .open else { return false }
            if let frame { box.append(frame) }
            box.state = .closing(code: code, reason: reason)
            return box.markScheduled()
        }
        if wake { waker.scheduleWrite(connection: id) }
    }

    /// Messages waiting to be written.
    public var queuedMessages: Int { outbox.withLock { $0.count } }
    /// Bytes waiting to be written.
    public var queuedBytes: Int { outbox.withLock { $0.bytes } }
    /// False once the connection is closing or closed.
    public var isOpen: Bool { outbox.withLock { $0.state == .open } }

    static func isSendable(closeCode code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    public var description: String { "WebSocketConnection(\(id) \(request.path))" }

    public static func == (lhs: WebSocketConnection, rhs: WebSocketConnection) -> Bool { lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

/// Many sends, one wake. Connections that went from idle to having output while a caller
/// queued frames with ``WebSocketConnection/send(_:batch:)`` are collected here and handed to
/// the service thread together by ``flush()`` (or when the batch goes out of scope, so a
/// forgotten flush still delivers). Not thread-safe: one batch per caller.
public struct WebSocketSendBatch: ~Copyable {
    private var waker: ServiceWaker?
    private var ids: [UInt64] = []

    public init() {}

    /// Connections waiting for the next `flush()`.
    public var pendingWakes: Int { ids.count }

    mutating func add(_ id: UInt64, waker: ServiceWaker) {
        if let current = self.waker, current !== waker { flush() }
        self.waker = waker
        ids.append(id)
    }

    /// Wakes the service thread (once) for every connection collected so far.
    public mutating func flush() {
        guard let waker, !ids.isEmpty else { return }
        waker.scheduleWrites(connections: ids)
        ids.removeAll(keepingCapacity: true)
    }

    deinit {
        if let waker, !ids.isEmpty { waker.scheduleWrites(connections: ids) }
    }
}

/// The outgoing side of one connection. Written by any thread, drained by the service thread.
struct Outbox: ~Copyable {
    enum State: Equatable {
        case open
        case closing(code: UInt16, reason: String)
        case closed
    }

    /// What the service thread should do next.
    enum Next {
        /// Write the frames just appended to the caller's run, in order, as one write; `more`
        /// is true if something (a frame or the close) follows them. When false the
        /// connection is no longer scheduled: the next `send` wakes the thread.
        case messages(more: Bool)
        case close(code: UInt16, reason: String)
        /// The close is due but the caller may not carry it out (outside the connection's
        /// writeable callback); it stays queued and the connection stays scheduled.
        case closeDue
        case idle
    }

    var state: State = .open
    private(set) var bytes = 0
    /// True while the service thread has been asked (or is about) to write this connection.
    private var scheduled = false
    private var messages: [WebSocketFrame] = []
    private var head = 0

    var count: Int { messages.count - head }

    mutating func append(_ frame: WebSocketFrame) {
        messages.append(frame)
        bytes += frame.count
    }

    /// Returns true if the caller must wake the service thread (it was not already scheduled).
    mutating func markScheduled() -> Bool {
        defer { scheduled = true }
        return !scheduled
    }

    /// Takes the next thing to write; clears the scheduled flag once nothing is left.
    /// A due close is returned only when `canClose`.
    ///
    /// Frames are appended to `run`: the head frame always, then the frames after it while
    /// the run's wire size (payloads and their headers) stays within `maxBytes`, so several
    /// small messages queued on one socket leave in one write. The close is never part of a
    /// run: it follows once everything before it was written.
    mutating func next(canClose: Bool = true, maxBytes: Int = 0, into run: inout [WebSocketFrame]) -> Next {
        if head < messages.count {
            var wire = 0
            repeat {
                let frame = messages[head]
                let size = frame.wireCount
                if wire > 0 && wire + size > maxBytes { break }
                run.append(frame)
                wire += size
                head += 1
                bytes -= frame.count
            } while head < messages.count
            if head == messages.count {
                messages.removeAll(keepingCapacity: messages.capacity <= 64)
                head = 0
            } else if head >= 64 && head * 2 >= messages.count {
                messages.removeFirst(head)
                head = 0
            }
            let more = hasWork
            if !more { scheduled = false }
            return .messages(more: more)
        }
        if case .closing(let code, let reason) = state {
            return canClose ? .close(code: code, reason: reason) : .closeDue
        }
        scheduled = false
        return .idle
    }

    /// True if `next(into:)` would return something.
    var hasWork: Bool {
        if head < messages.count { return true }
        if case .closing = state { return true }
        return false
    }

    /// Drops everything queued and closes with `code` (server shutdown).
    mutating func forceClose(code: UInt16, reason: String) {
        guard state != .closed else { return }
        messages = []
        head = 0
        bytes = 0
        state = .closing(code: code, reason: reason)
    }

    /// The socket is gone: free the queue and refuse further sends.
    mutating func markClosed() {
        messages = []
        head = 0
        bytes = 0
        scheduled = false
        state = .closed
    }
}
