import CMicroHTTPD
import Foundation

/// Conversions between socket addresses and text, for binding and for `HTTPRequest.remoteAddress`.
enum SocketAddress {
    /// A bindable address: `sockaddr_in` or `sockaddr_in6` bytes, and whether it is IPv6.
    struct Bind {
        var storage = sockaddr_storage()
        var isIPv6 = false
    }

    /// Parses an IPv4/IPv6 literal (or `localhost`) and a port into a bind address.
    static func bind(host: String, port: Int) -> Bind? {
        guard (0...65535).contains(port) else { return nil }
        let literal = host == "localhost" ? "127.0.0.1" : host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        var result = Bind()
        let ok = withUnsafeMutableBytes(of: &result.storage) { raw -> Bool in
            if literal.contains(":") {
                let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                address.pointee.sin6_family = sa_family_t(AF_INET6)
                address.pointee.sin6_port = in_port_t(UInt16(port).bigEndian)
                return inet_pton(AF_INET6, literal, &address.pointee.sin6_addr) == 1
            }
            let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
            address.pointee.sin_family = sa_family_t(AF_INET)
            address.pointee.sin_port = in_port_t(UInt16(port).bigEndian)
            return inet_pton(AF_INET, literal, &address.pointee.sin_addr) == 1
        }
        result.isIPv6 = literal.contains(":")
        return ok ? result : nil
    }

    /// `192.0.2.1` or `2001:db8::1` for an IPv4/IPv6 peer; `nil` for other families.
    static func describe(_ address: UnsafePointer<sockaddr>) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let written: UnsafePointer<CChar>?
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            written = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
                var addr = ipv4.pointee.sin_addr
                return inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count))
            }
        case AF_INET6:
            written = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { ipv6 in
                var addr = ipv6.pointee.sin6_addr
                return inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count))
            }
        default:
            return nil
        }
        guard written != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
