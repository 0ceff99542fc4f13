import Foundation

/// TCP ports on 127.0.0.1, probed by binding a socket and closing it at once: what the
/// private servers (PostgreSQL, SeaweedFS) and the tests pick their ports with.
public enum LoopbackPort {
    /// The port a socket bound to `port` got (any free one for 0), or nil when `port` is taken.
    public static func probe(_ port: Int) -> Int? {
        guard (0...65_535).contains(port) else { return nil }
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        // As servers bind (SO_REUSEADDR): connections of a stopped server in TIME_WAIT do not
        // make its port taken; a socket listening on it still does.
        var on: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    /// A free port the kernel picked (from the ephemeral range), nil when none could be bound.
    public static func free() -> Int? { probe(0) }

    /// Whether `port` can be bound on loopback now.
    public static func isFree(_ port: Int) -> Bool { probe(port) != nil }
}
