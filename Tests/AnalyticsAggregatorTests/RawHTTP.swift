import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Just enough HTTP/1.1 client to read the real process's answers byte for byte.
enum RawHTTP {
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
