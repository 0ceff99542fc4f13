import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A deliberately small blocking WebSocket client for tests: handshake, masked frames,
/// optional fragmentation, and full control over when (or whether) it reads.
///
/// `@unchecked Sendable`: each test uses one client from one task at a time; blocking calls
/// are moved off the cooperative pool with `blocking { }`.
final class RawWebSocketClient: @unchecked Sendable {
    enum Message: Equatable {
        case text(String)
        case binary([UInt8])
        case close(code: UInt16?, reason: String)
        case ping
    }

    struct ClientError: Error, CustomStringConvertible {
        var description: String
    }

    let fd: Int32
    private var buffer: [UInt8] = []
    var answersPings = true
    private(set) var handshakeStatus = 0
    private(set) var handshakeHead = ""
    private(set) var handshakeBody = ""

    /// Connects to 127.0.0.1:`port`; `receiveBuffer` shrinks SO_RCVBUF (a slow reader's kernel buffer).
    init(port: Int, receiveBuffer: Int32? = nil, timeoutSeconds: Int = 10) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError(description: "socket failed") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            throw ClientError(description: "connect failed: \(errno)")
        }
    }

    deinit { close(fd) }

    /// Sends the upgrade request; returns true on 101. On a refusal the status and body are kept.
    @discardableResult
    func handshake(target: String, headers: [String: String] = [:]) throws -> Bool {
        var request = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n"
        try writeAll(Array(request.utf8))
        let head = try readHead()
        handshakeHead = head
        let statusLine = head.split(separator: "\r\n").first ?? ""
        handshakeStatus = Int(statusLine.split(separator: " ").dropFirst().first ?? "") ?? 0
        if handshakeStatus == 101 { return true }
        let length = head.split(separator: "\r\n").compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
            return Int(parts[1].trimmingCharacters(in: .whitespaces))
        }.first ?? 0
        handshakeBody = String(decoding: try readExact(length), as: UTF8.self)
        return false
    }

    /// Sends a text message, split into `fragments` frames (continuation frames after the first).
    func sendText(_ text: String, fragments: Int = 1) throws {
        let bytes = Array(text.utf8)
        let size = max(1, (bytes.count + fragments - 1) / max(1, fragments))
        var offset = 0
        var first = true
        repeat {
            let end = min(bytes.count, offset + size)
            try sendFrame(opcode: first ? 0x1 : 0x0, fin: end == bytes.count, payload: Array(bytes[offset..<end]))
            first = false
            offset = end
        } while offset < bytes.count
    }

    func sendClose(code: UInt16 = 1000) throws {
        try sendFrame(opcode: 0x8, fin: true, payload: [UInt8(code >> 8), UInt8(code & 0xFF)])
    }

    func sendFrame(opcode: UInt8, fin: Bool, payload: [UInt8]) throws {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            frame.append(0x80 | 126)
            frame += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8((UInt64(payload.count) >> UInt64(shift)) & 0xFF)) }
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try writeAll(frame)
    }

    /// Reads one whole message (reassembling fragments). Pings are answered unless
    /// `answersPings` is false, in which case `.ping` is returned.
    func readMessage() throws -> Message {
        var message: [UInt8] = []
        var opcode: UInt8 = 0
        while true {
            let header = try readExact(2)
            let fin = header[0] & 0x80 != 0
            let frameOpcode = header[0] & 0x0F
            var length = Int(header[1] & 0x7F)
            if length == 126 {
                let ext = try readExact(2)
                length = Int(ext[0]) << 8 | Int(ext[1])
            } else if length == 127 {
                length = try readExact(8).reduce(0) { $0 << 8 | Int($1) }
            }
            let payload = try readExact(length)
            switch frameOpcode {
            case 0x8:
                let code = payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil
                return .close(code: code, reason: String(decoding: payload.dropFirst(2), as: UTF8.self))
            case 0x9:
                if !answersPings { return .ping }
                try sendFrame(opcode: 0xA, fin: true, payload: payload)
                continue
            case 0xA:
                continue
            default:
                if frameOpcode != 0 { opcode = frameOpcode }
                message += payload
                guard fin else { continue }
                return opcode == 0x2 ? .binary(message) : .text(String(decoding: message, as: UTF8.self))
            }
        }
    }

    /// Reads until the peer closes the TCP connection (true) or the read times out (false).
    func waitForEOF() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }

    private func readHead() throws -> String {
        let terminator: [UInt8] = [13, 10, 13, 10]
        while true {
            if let range = buffer.firstRange(of: terminator) {
                let head = String(decoding: buffer[..<range.lowerBound], as: UTF8.self)
                buffer.removeFirst(range.upperBound)
                return head
            }
            try fill()
        }
    }

    func readExact(_ count: Int) throws -> [UInt8] {
        while buffer.count < count { try fill() }
        let result = Array(buffer.prefix(count))
        buffer.removeFirst(count)
        return result
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &chunk, chunk.count, 0)
        if n == 0 { throw ClientError(description: "connection closed by peer") }
        if n < 0 { throw ClientError(description: "recv failed: \(errno)") }
        buffer += chunk[..<n]
    }

    private func writeAll(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw ClientError(description: "send failed: \(errno)") }
            offset += n
        }
    }
}

/// Runs blocking work (socket reads, processes) off the cooperative thread pool.
func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(with: Result { try work() })
        }
    }
}
