import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A minimal blocking HTTP/1.1 client over one TCP connection, so tests control keep-alive,
/// framing (Content-Length vs chunked) and what is (not) sent. Run it off the cooperative pool
/// with `onThread`.
/// `@unchecked Sendable`: a test uses a connection from one thread at a time (handing it from one
/// `onThread` block to the next, never concurrently).
final class RawHTTPConnection: @unchecked Sendable {
    enum Failure: Error, CustomStringConvertible {
        case connect(Int32)
        case io(Int32)
        case closedByPeer
        case malformed(String)

        var description: String {
            switch self {
            case .connect(let code): "connect failed: \(String(cString: strerror(code)))"
            case .io(let code): "socket I/O failed: \(String(cString: strerror(code)))"
            case .closedByPeer: "connection closed by the server"
            case .malformed(let what): "malformed response: \(what)"
            }
        }
    }

    struct Response {
        var status: Int
        var headers: [(name: String, value: String)]
        var body: [UInt8]

        func header(_ name: String) -> String? {
            headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
        var text: String { String(decoding: body, as: UTF8.self) }
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }
        var errorCode: String? { (json?["error"] as? [String: Any])?["code"] as? String }
        var errorMessage: String? { (json?["error"] as? [String: Any])?["message"] as? String }
    }

    private let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int, timeoutSeconds: Int = 15) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure.connect(errno) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw Failure.connect(code)
        }
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw Failure.io(errno) }
            offset += written
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Sends a request with a Content-Length body (or none).
    func sendRequest(_ method: String, _ target: String, headers: [String: String] = [:], body: [UInt8] = []) throws {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try send(Array(head.utf8) + body)
    }

    func request(_ method: String, _ target: String, headers: [String: String] = [:], body: [UInt8] = []) throws -> Response {
        try sendRequest(method, target, headers: headers, body: body)
        return try readResponse(isHead: method == "HEAD")
    }

    func readResponse(isHead: Bool = false) throws -> Response {
        let headEnd = try readUntil([13, 10, 13, 10])
        let head = String(decoding: buffer[..<headEnd], as: UTF8.self)
        buffer.removeFirst(headEnd + 4)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            throw Failure.malformed(head)
        }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var response = Response(status: status, headers: headers, body: [])
        if isHead || status == 204 || status == 304 { return response }
        if let length = response.header("Content-Length").flatMap({ Int($0) }) {
            response.body = try readExactly(length)
        } else if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            while true {
                let lineEnd = try readUntil([13, 10])
                let sizeText = String(decoding: buffer[..<lineEnd], as: UTF8.self).split(separator: ";")[0]
                buffer.removeFirst(lineEnd + 2)
                guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                    throw Failure.malformed("chunk size")
                }
                if size == 0 { _ = try readUntil([13, 10]); buffer.removeFirst(2); break }
                response.body += try readExactly(size)
                _ = try readExactly(2)
            }
        } else {
            while try fill() {}
            response.body = buffer
            buffer = []
        }
        return response
    }

    /// Whether the server closed the connection (reads EOF), waiting up to the socket timeout.
    func isClosedByPeer() -> Bool {
        do { return try !fill() } catch { return true }
    }

    private func readUntil(_ marker: [UInt8]) throws -> Int {
        var searchFrom = 0
        while true {
            if buffer.count >= marker.count {
                for start in searchFrom...(buffer.count - marker.count) where buffer[start..<(start + marker.count)].elementsEqual(marker) {
                    return start
                }
                searchFrom = buffer.count - marker.count + 1
            }
            guard try fill() else { throw Failure.closedByPeer }
        }
    }

    private func readExactly(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else { throw Failure.closedByPeer }
        }
        let bytes = Array(buffer[..<count])
        buffer.removeFirst(count)
        return bytes
    }

    /// Reads more bytes; false on EOF.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 {
            if errno == ECONNRESET { return false }
            throw Failure.io(errno)
        }
        if count == 0 { return false }
        buffer.append(contentsOf: chunk[..<count])
        return true
    }
}

/// Runs blocking work on its own thread so the cooperative pool (2 threads on CI) stays free
/// for the server's handlers.
func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.stackSize = 1 << 20
        thread.start()
    }
}
