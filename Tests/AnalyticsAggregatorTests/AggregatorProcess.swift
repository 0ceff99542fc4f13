import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The `analytics-aggregator` executable run as a child process, to be killed for real.
final class AggregatorProcess {
    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    static var binary: URL { packageRoot.appendingPathComponent(".build/debug/analytics-aggregator") }

    let process = Process()
    let port: Int

    init(environment: [String: String], port: Int, log: URL) throws {
        self.port = port
        process.executableURL = Self.binary
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        env["HTTP_PORT"] = String(port)
        env["HTTP_HOST"] = "127.0.0.1"
        process.environment = env
        if !FileManager.default.fileExists(atPath: log.path) { _ = FileManager.default.createFile(atPath: log.path, contents: nil) }
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    var isRunning: Bool { process.isRunning }

    /// SIGKILL: no shutdown work at all, whatever the process was doing.
    func kill() {
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// SIGTERM and wait for a clean exit.
    func terminate() -> Int32 {
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// A port nobody listens on right now.
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A plain HTTP/1.1 GET over a socket; returns status and body.
    static func get(port: Int, path: String, token: String) throws -> (status: Int, body: [UInt8]) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nConnection: close\r\n\r\n"
        _ = request.utf8CString.withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count - 1, 0) }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            response += buffer[0..<n]
        }
        let text = String(decoding: response, as: UTF8.self)
        guard let headerEnd = text.range(of: "\r\n\r\n"),
              let status = Int(text.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") else {
            throw POSIXError(.EBADMSG)
        }
        let headers = text[..<headerEnd.lowerBound].lowercased()
        var body = Array(text[headerEnd.upperBound...].utf8)
        if headers.contains("transfer-encoding: chunked") { body = dechunk(body) }
        return (status, body)
    }

    static func dechunk(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var text = Substring(String(decoding: bytes, as: UTF8.self))
        while let lineEnd = text.range(of: "\r\n"), let size = Int(text[..<lineEnd.lowerBound], radix: 16), size > 0 {
            let start = lineEnd.upperBound
            let chunk = text.utf8[start...].prefix(size)
            out += chunk
            text = Substring(text.utf8[text.utf8.index(start, offsetBy: size)...]).dropFirst(2)
        }
        return out
    }
}
