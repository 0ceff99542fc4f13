import Foundation

/// The body of a request whose route streams it (`Router.streaming`): the handler runs as soon
/// as the headers are in and reads the body while it arrives, so a large upload is never held
/// in memory. The server appends what the connection delivers; past `highWater` buffered bytes
/// it stops reading the socket (the client is slowed by TCP) until the reader has taken the
/// buffer down to `lowWater`.
///
/// `read(into:)` blocks: call it from a thread of its own (a libcurl read callback on a
/// `BlockingCall` thread), never from a task.
public final class HTTPBodyStream: @unchecked Sendable {
    /// `Content-Length`, when the client sent one (nil for a chunked body).
    public let declaredLength: Int64?
    public static let highWater = 1 << 20
    public static let lowWater = 256 << 10

    // Everything below is guarded by `condition`.
    private let condition = NSCondition()
    private var chunks: [[UInt8]] = []
    private var head = 0
    private var offset = 0
    private var buffered = 0
    private var received: Int64 = 0
    private var finished = false
    private var broken = false
    /// The handler answered: what still arrives is discarded.
    private var answered = false
    /// The server stopped reading the connection (backpressure) and waits for `resume`.
    private var paused = false
    /// The connection is gone: it must never be resumed again.
    private var closed = false
    private let suspendConnection: @Sendable () -> Void
    private let resumeConnection: @Sendable () -> Void

    /// `suspend` and `resume` stop and restart reading the connection; they are called with
    /// this stream's lock held, each at most once per pause.
    package init(declaredLength: Int64?, suspend: @escaping @Sendable () -> Void, resume: @escaping @Sendable () -> Void) {
        self.declaredLength = declaredLength
        self.suspendConnection = suspend
        self.resumeConnection = resume
    }

    /// A stream over bytes already in memory (tests, and callers without a server).
    public convenience init(bytes: [UInt8]) {
        self.init(declaredLength: Int64(bytes.count), suspend: {}, resume: {})
        if !bytes.isEmpty { chunks = [bytes] }
        buffered = bytes.count
        received = Int64(bytes.count)
        finished = true
    }

    // MARK: - The server's side (the connection's thread)

    /// A piece of the body; pauses the connection once `highWater` bytes wait.
    package func append(_ bytes: UnsafeRawBufferPointer) {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return }
        received += Int64(bytes.count)
        guard !answered else { return }  // discarded, but received
        chunks.append(Array(bytes))
        buffered += bytes.count
        if buffered >= Self.highWater, !paused {
            paused = true
            suspendConnection()
        }
        condition.broadcast()
    }

    /// The whole body arrived.
    package func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// The connection ended before the body did (the client went away, or timed out).
    package func connectionClosed() {
        condition.lock()
        closed = true
        paused = false
        if !finished { broken = true }
        condition.broadcast()
        condition.unlock()
    }

    /// The handler answered: the rest of the body is discarded, and a paused connection resumes
    /// so that it can be read to its end and answered.
    package func answer() {
        condition.lock()
        answered = true
        chunks = []
        head = 0
        offset = 0
        buffered = 0
        if paused, !closed {
            paused = false
            resumeConnection()
        }
        condition.broadcast()
        condition.unlock()
    }

    // MARK: - The reader's side (a thread of its own)

    /// Copies the next bytes into `buffer`: how many, 0 at the end of the body, nil when the
    /// body broke off (the client went away before sending all of it).
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        guard buffer.count > 0 else { return 0 }
        condition.lock()
        defer { condition.unlock() }
        while head == chunks.count && !finished && !broken && !answered { condition.wait() }
        if head == chunks.count { return broken || answered ? nil : 0 }
        var copied = 0
        while copied < buffer.count, head < chunks.count {
            let chunk = chunks[head]
            let n = min(buffer.count - copied, chunk.count - offset)
            chunk.withUnsafeBytes { source in
                buffer.baseAddress!.advanced(by: copied).copyMemory(from: source.baseAddress!.advanced(by: offset), byteCount: n)
            }
            copied += n
            offset += n
            if offset == chunk.count {
                head += 1
                offset = 0
            }
        }
        if head == chunks.count {
            chunks = []
            head = 0
        } else if head > 64 {
            chunks.removeFirst(head)
            head = 0
        }
        buffered -= copied
        if paused, buffered <= Self.lowWater, !closed {
            paused = false
            resumeConnection()
        }
        return copied
    }

    /// Reads up to `count` bytes (fewer only at the end of the body); nil when the body broke off.
    public func read(upTo count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = bytes.withUnsafeMutableBytes { read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...])) }
            guard let n else { return nil }
            if n == 0 { break }
            filled += n
        }
        return Array(bytes.prefix(filled))
    }

    /// Bytes the server has received so far.
    public var receivedBytes: Int64 {
        condition.lock()
        defer { condition.unlock() }
        return received
    }
}
