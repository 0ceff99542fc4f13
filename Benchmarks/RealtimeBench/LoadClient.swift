import CEpoll
import Foundation
import Glibc
import Synchronization

/// The bench's in-process load generator: `threads` dedicated threads, each holding its
/// share of the WebSocket connections on non-blocking sockets driven by one `epoll`.
///
/// A minimal client, bench-only: the upgrade request (the `101` status is checked, the
/// accept key is not), masked client text frames (only the `phx_join`), unmasked server
/// frames. Of each broadcast it reads only the publish time (payload field `"t"`, epoch ms,
/// set by the producer) and the channel sequence (`meta.id`): latency is receive time −
/// publish time on the same wall clock, and every connection checks that sequences arrive
/// in order with no gap and no duplicate.
final class LoadClient: Sendable {
    struct Totals {
        var received = 0
        var errors = 0
        /// 0.1 ms buckets; the last one collects everything ≥ its bound.
        var histogram = [Int](repeating: 0, count: LoadClient.buckets)
    }

    static let buckets = 200_000  // 20 s

    private let port: UInt16
    private let path: String
    private let topics: [String]
    private let threads: Int
    private let stopFlag = Atomic<Bool>(false)
    private let readyCount = Atomic<Int>(0)
    private let failed = Mutex<String?>(nil)
    private let results = Mutex<[Totals]>([])
    private let finished = Atomic<Int>(0)
    /// Each thread's CPU clock (`pthread_getcpuclockid`), for the bench's CPU accounting.
    private let cpuClocks = Mutex<[clockid_t]>([])

    /// `topics[i]` is the topic connection `i` joins.
    init(port: UInt16, path: String, topics: [String], threads: Int) {
        self.port = port
        self.path = path
        self.topics = topics
        self.threads = max(1, threads)
    }

    var ready: Int { readyCount.load(ordering: .acquiring) }
    var failure: String? { failed.withLock { $0 } }

    func start() {
        for index in 0..<threads {
            let mine = stride(from: index, to: topics.count, by: threads).map { topics[$0] }
            let thread = Thread { [self] in self.run(mine) }
            thread.name = "load-client-\(index)"
            thread.start()
        }
    }

    /// Stops every thread and returns the merged counts.
    func stop() async -> Totals {
        stopFlag.store(true, ordering: .releasing)
        while finished.load(ordering: .acquiring) < threads { try? await Task.sleep(for: .milliseconds(20)) }
        var total = Totals()
        for part in results.withLock({ $0 }) {
            total.received += part.received
            total.errors += part.errors
            for (index, count) in part.histogram.enumerated() where count > 0 { total.histogram[index] += count }
        }
        return total
    }

    /// CPU seconds the client threads have used so far.
    var cpuSeconds: Double {
        cpuClocks.withLock { clocks in
            clocks.reduce(0) { sum, clock in
                var spec = timespec()
                clock_gettime(clock, &spec)
                return sum + Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
            }
        }
    }

    private func run(_ topics: [String]) {
        var clock = clockid_t()
        if pthread_getcpuclockid(pthread_self(), &clock) == 0 { cpuClocks.withLock { $0.append(clock) } }
        var totals = Totals()
        defer {
            results.withLock { $0.append(totals) }
            finished.add(1, ordering: .releasing)
        }
        let epfd = epoll_create1(0)
        guard epfd >= 0 else { return fail("epoll_create1: errno \(errno)") }
        defer { close(epfd) }
        var connections: [Int32: Connection] = [:]
        defer { for fd in connections.keys { close(fd) } }
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        var scratch = [UInt8](repeating: 0, count: 1 << 16)
        var opened = 0
        while !stopFlag.load(ordering: .acquiring) {
            // Open connections in small batches so the server's accept queue never overflows.
            var batch = 0
            while opened < topics.count, batch < 25 {
                guard let fd = connect(topic: topics[opened]) else { return fail("connect failed: errno \(errno)") }
                var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(fd: fd))
                epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event)
                connections[fd] = Connection(topic: topics[opened])
                opened += 1
                batch += 1
            }
            let count = epoll_wait(epfd, &events, Int32(events.count), opened < topics.count ? 5 : 100)
            guard count >= 0 else {
                if errno == EINTR { continue }
                return fail("epoll_wait: errno \(errno)")
            }
            for index in 0..<Int(count) {
                let fd = events[index].data.fd
                guard let connection = connections[fd] else { continue }
                while true {
                    let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if n > 0 {
                        connection.buffer.append(contentsOf: scratch[0..<n])
                        if !process(connection, fd: fd, totals: &totals) {
                            totals.errors += 1
                            epoll_ctl(epfd, EPOLL_CTL_DEL, fd, nil)
                            close(fd)
                            connections[fd] = nil
                            break
                        }
                        if n < scratch.count { break }
                    } else if n < 0, errno == EAGAIN || errno == EINTR {
                        break
                    } else {
                        totals.errors += 1  // closed by the server
                        epoll_ctl(epfd, EPOLL_CTL_DEL, fd, nil)
                        close(fd)
                        connections[fd] = nil
                        break
                    }
                }
            }
        }
    }

    private func fail(_ message: String) {
        failed.withLock { $0 = $0 ?? message }
    }

    /// A blocking loopback connect plus the upgrade request, then non-blocking.
    private func connect(topic: String) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            return nil
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        guard sendAll(fd, Array(request.utf8)) else {
            close(fd)
            return nil
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    private func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                offset += n
            } else if n < 0, errno == EAGAIN || errno == EINTR {
                usleep(1000)
            } else {
                return false
            }
        }
        return true
    }

    /// Consumes whole frames from the connection's buffer; false on a protocol error or close.
    private func process(_ connection: Connection, fd: Int32, totals: inout Totals) -> Bool {
        if connection.state == .handshaking {
            guard let end = connection.headerEnd() else { return true }
            guard connection.buffer.count >= 12, connection.buffer[9] == UInt8(ascii: "1"),
                  connection.buffer[10] == UInt8(ascii: "0"), connection.buffer[11] == UInt8(ascii: "1") else { return false }
            connection.consumed = end
            connection.state = .joining
            let join = "[\"1\",\"1\",\"\(connection.topic)\",\"phx_join\",{\"config\":{\"broadcast\":{\"self\":false}}}]"
            guard sendAll(fd, Self.maskedTextFrame(Array(join.utf8))) else { return false }
        }
        let now = Self.nowMilliseconds()
        while let (opcode, start, length) = connection.nextFrame() {
            if opcode == 0x8 { return false }
            if opcode == 0x1 {
                connection.buffer.withUnsafeBufferPointer { all in
                    let payload = UnsafeBufferPointer(rebasing: all[start..<start + length])
                    if connection.state == .joining {
                        if Self.find(Array("\"phx_reply\"".utf8), in: payload) != nil {
                            connection.state = .joined
                            readyCount.add(1, ordering: .releasing)
                        }
                        return
                    }
                    guard let seq = Self.number(after: Self.idKey, in: payload, quoted: true) else { return }
                    if connection.lastSeq >= 0, Int64(seq) != connection.lastSeq + 1 { totals.errors += 1 }
                    connection.lastSeq = Int64(seq)
                    guard let sent = Self.number(after: Self.timeKey, in: payload, quoted: false) else { return }
                    totals.received += 1
                    let bucket = Int(((now - sent) * 10).rounded(.down))
                    totals.histogram[min(max(bucket, 0), Self.buckets - 1)] += 1
                }
            }
            connection.consumed = start + length
        }
        connection.compact()
        return true
    }

    static let idKey = Array("\"id\":\"".utf8)
    static let timeKey = Array("\"t\":".utf8)

    static func nowMilliseconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) * 1000 + Double(spec.tv_nsec) / 1_000_000
    }

    static func find(_ needle: [UInt8], in haystack: UnsafeBufferPointer<UInt8>) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var index = 0
        let first = needle[0]
        outer: while index <= haystack.count - needle.count {
            if haystack[index] == first {
                for offset in 1..<needle.count where haystack[index + offset] != needle[offset] {
                    index += 1
                    continue outer
                }
                return index
            }
            index += 1
        }
        return nil
    }

    /// The JSON number after `key` (an integer string when `quoted`).
    static func number(after key: [UInt8], in payload: UnsafeBufferPointer<UInt8>, quoted: Bool) -> Double? {
        guard let at = find(key, in: payload) else { return nil }
        var index = at + key.count
        var text: [CChar] = []
        text.reserveCapacity(32)
        while index < payload.count, text.count < 31 {
            let byte = payload[index]
            guard (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") || byte == UInt8(ascii: "+") else { break }
            text.append(CChar(bitPattern: byte))
            index += 1
        }
        guard !text.isEmpty else { return nil }
        if quoted, index >= payload.count || payload[index] != UInt8(ascii: "\"") { return nil }
        text.append(0)
        return strtod(text, nil)
    }

    /// A FIN text frame with a (fixed, non-zero) mask, as clients must send.
    static func maskedTextFrame(_ payload: [UInt8]) -> [UInt8] {
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else {
            frame.append(0x80 | 126)
            frame.append(UInt8(payload.count >> 8))
            frame.append(UInt8(payload.count & 0xff))
        }
        let mask: [UInt8] = [0x37, 0xfa, 0x21, 0x3d]
        frame.append(contentsOf: mask)
        for (index, byte) in payload.enumerated() { frame.append(byte ^ mask[index & 3]) }
        return frame
    }
}
