import CMicroHTTPD
import HTTPRouting
import Foundation
import Lifecycle
import ServiceLogging
import Synchronization

/// Owns one running `struct MHD_Daemon`: an epoll loop on a single internal thread, with
/// suspend/resume enabled (which also gives the inter-thread channel `MHD_quiesce_daemon` needs).
///
/// `@unchecked Sendable`: the daemon pointer is immutable; the libmicrohttpd calls made through
/// it (`MHD_quiesce_daemon`, `MHD_get_daemon_info`, `MHD_stop_daemon`) are documented as callable
/// from any thread, and quiesce/stop are each performed at most once under `state`'s lock.
final class MicroHTTPDaemon: @unchecked Sendable {
    private struct State {
        var quiescedListenSocket: Int32?
        var stopped = false
    }

    private let daemon: OpaquePointer
    /// Kept alive here because the daemon holds it as an unretained callback context.
    private let core: ServerCore
    private let state = Mutex(State())
    let port: Int

    init(core: ServerCore) throws(HTTPServerError) {
        let configuration = core.configuration
        func failure(_ code: HTTPServerError.Code, _ message: String, errno: Int32? = nil) -> HTTPServerError {
            HTTPServerError(code, message: message, host: configuration.host, port: configuration.port, errno: errno)
        }
        guard configuration.maxBodyBytes >= 0, configuration.maxConnections > 0,
              configuration.maxConcurrentRequests > 0, configuration.requestTimeout >= .zero else {
            throw failure(.invalidConfiguration, "limits must be positive")
        }
        guard configuration.connectionMemoryBytes >= 4 * 1024 else {
            throw failure(.invalidConfiguration, "connectionMemoryBytes must be at least 4 KiB")
        }
        guard var address = SocketAddress.bind(host: configuration.host, port: configuration.port) else {
            throw failure(.invalidConfiguration, "host is not an IP address literal or the port is out of range")
        }
        var flags = MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_USE_ERROR_LOG.rawValue
        if address.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        Self.raiseOpenFileLimit(toFit: configuration.maxConnections)
        let timeout = configuration.requestTimeout == .zero ? 0 : max(1, Int(configuration.requestTimeout.timeInterval.rounded(.up)))
        let context = Unmanaged.passUnretained(core).toOpaque()
        errno = 0
        let started = withUnsafePointer(to: &address.storage) { storage in
            storage.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer in
                zx_mhd_start_daemon(
                    flags, sockaddrPointer,
                    MicroHTTPDaemon.accessHandler, context,
                    MicroHTTPDaemon.requestCompleted, context,
                    MicroHTTPDaemon.log, context,
                    UInt32(clamping: configuration.maxConnections), UInt32(clamping: timeout), configuration.connectionMemoryBytes)
            }
        }
        guard let started else {
            let code = errno
            let reason = code == 0 ? "libmicrohttpd could not start" : String(cString: strerror(code))
            throw failure(.bindFailed, "could not listen on \(configuration.host):\(configuration.port): \(reason)",
                          errno: code == 0 ? nil : code)
        }
        self.daemon = started
        self.core = core
        self.port = Int(zx_mhd_bound_port(started))
    }

    deinit { stop() }

    /// Raises the soft limit of open files so that `connections` sockets (plus a margin for
    /// the process's other descriptors) fit, up to the hard limit; never lowers it.
    private static func raiseOpenFileLimit(toFit connections: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let wanted = rlim_t(clamping: connections + 1_024)
        guard limit.rlim_cur < wanted else { return }
        limit.rlim_cur = min(wanted, limit.rlim_max)
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// Stops accepting: the listen socket leaves the event loop and is shut down, so new
    /// connection attempts are refused instead of waiting in the backlog.
    func quiesce() {
        state.withLock { state in
            guard !state.stopped, state.quiescedListenSocket == nil else { return }
            let socket = MHD_quiesce_daemon(daemon)
            guard socket != MHD_INVALID_SOCKET else { return }
            _ = Foundation.shutdown(socket, Int32(SHUT_RDWR))
            state.quiescedListenSocket = socket
        }
    }

    /// Closes every connection and joins the polling thread (blocking). No connection may be suspended.
    func stop() {
        let listenSocket = state.withLock { state -> Int32?? in
            guard !state.stopped else { return nil }
            state.stopped = true
            return .some(state.quiescedListenSocket)
        }
        guard let listenSocket else { return }
        MHD_stop_daemon(daemon)
        if let socket = listenSocket { close(socket) }  // MHD leaves a quiesced socket to its caller
    }

    // MARK: - C callbacks (context: the unretained ServerCore)

    private static let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadDataSize, contextSlot in
        guard let cls, let connection, let url, let method, let uploadDataSize, let contextSlot else { return MHD_Result.NO }
        let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
        return core.access(connection: connection, url: url, method: method,
                           uploadData: uploadData, uploadDataSize: uploadDataSize, contextSlot: contextSlot)
    }

    /// Called once for every request the access handler saw, whatever the outcome: releases its context.
    private static let requestCompleted: MHD_RequestCompletedCallback = { cls, _, contextSlot, _ in
        guard let cls, let contextSlot, let raw = contextSlot.pointee else { return }
        contextSlot.pointee = nil
        // A request marked by the URI log callback that never reached the access handler.
        guard raw != ServerCore.nulPathMarker else { return }
        let context = Unmanaged<RequestContext>.fromOpaque(raw)
        // A streaming body that broke off: its reader stops waiting, and the connection, gone,
        // is never resumed again.
        context.takeUnretainedValue().stream?.connectionClosed()
        context.release()
        Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue().requestFinished()
    }

    private static let log: MHD_LogCallback = { cls, format, arguments in
        guard let cls, let format, let arguments else { return }
        // libmicrohttpd logs a failed bind and then returns; the caller reads errno after
        // that, so logging must leave it as it was (a log write had turned EADDRINUSE
        // into "No such file or directory").
        let failure = errno
        defer { errno = failure }
        var buffer = [CChar](repeating: 0, count: 512)
        _ = vsnprintf(&buffer, buffer.count, format, arguments)
        let message = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue().logger.warning(
            "libmicrohttpd: \(message.trimmingCharacters(in: .whitespacesAndNewlines))")
    }
}
