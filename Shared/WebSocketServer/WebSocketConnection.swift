import Synchronization

/// One accepted WebSocket connection.
///
/// `send` and `close` may be called from any thread: they only touch this connection's
/// bounded outgoing queue and wake the service thread, which does every socket write.
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
        let bytes = Array(text.utf8)
        let (result, wake) = outbox.withLock { box -> (WebSocketSendResult, Bool) in
            guard box.state == .open else { return (.closed, false) }
            guard box.count + 1 <= maxQueuedMessages, box.bytes + bytes.count <= maxQueuedBytes else {
                return (.overflow, false)
            }
            box.append(bytes)
            return (.queued, box.markScheduled())
        }
        if wake { waker.scheduleWrite(connection: id) }
        return result
    }

    /// Queues `finalText` (even past the bounds) after whatever is already queued, sends it,
    /// then closes with `code` and `reason`. Later `send` calls return `.closed`.
    /// Codes that may not be sent on the wire (1004–1006, 1015, < 1000, ≥ 5000) become 1000.
    public func close(after finalText: String? = nil, code: UInt16 = 1000, reason: String = "") {
        let code = Self.isSendable(closeCode: code) ? code : 1000
        let wake = outbox.withLock { box -> Bool in
            guard box.state == .open else { return false }
            if let finalText { box.append(Array(finalText.utf8)) }
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

/// The outgoing side of one connection. Written by any thread, drained by the service thread.
struct Outbox: ~Copyable {
    enum State: Equatable {
        case open
        case closing(code: UInt16, reason: String)
        case closed
    }

    /// What the service thread should do next.
    enum Next {
        case message([UInt8])
        case close(code: UInt16, reason: String)
        case idle
    }

    var state: State = .open
    private(set) var bytes = 0
    /// True while the service thread has been asked (or is about) to write this connection.
    private var scheduled = false
    private var messages: [[UInt8]] = []
    private var head = 0

    var count: Int { messages.count - head }

    mutating func append(_ message: [UInt8]) {
        messages.append(message)
        bytes += message.count
    }

    /// Returns true if the caller must wake the service thread (it was not already scheduled).
    mutating func markScheduled() -> Bool {
        defer { scheduled = true }
        return !scheduled
    }

    /// Takes the next thing to write; clears the scheduled flag once nothing is left.
    mutating func next() -> Next {
        if head < messages.count {
            let message = messages[head]
            messages[head] = []
            head += 1
            bytes -= message.count
            if head == messages.count {
                messages.removeAll(keepingCapacity: messages.capacity <= 64)
                head = 0
            } else if head >= 64 && head * 2 >= messages.count {
                messages.removeFirst(head)
                head = 0
            }
            return .message(message)
        }
        if case .closing(let code, let reason) = state { return .close(code: code, reason: reason) }
        scheduled = false
        return .idle
    }

    /// After a batch of writes: true if more work is queued (the writer re-arms itself),
    /// otherwise clears the scheduled flag so the next `send` wakes the service thread.
    mutating func finishBatch() -> Bool {
        if hasWork { return true }
        scheduled = false
        return false
    }

    /// True if `next()` would return something.
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
