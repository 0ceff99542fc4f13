import BlockingCalls
import Foundation
import Synchronization
internal import CLibPQ

/// Waits for sockets to become readable or writable without holding a thread per socket: one
/// `epoll` instance per process, watched by one thread outside the task pool, resumes the
/// tasks whose sockets are ready.
///
/// A statement sent from the task's own thread then costs one wake-up when its answer arrives
/// (this thread's, which under load finds several answers at once), where a hand-off to a
/// connection's queue cost two: the queue's thread woken to send, and woken again by the answer.
/// Each registration is one-shot (`EPOLLONESHOT`): a socket is watched for one wait at a time,
/// by the one task that holds its connection.
final class SocketReadiness: Sendable {
    static let shared = SocketReadiness()

    enum Interest {
        case readable, writable

        var events: UInt32 {
            switch self {
            case .readable: EPOLLIN.rawValue | EPOLLONESHOT.rawValue
            case .writable: EPOLLOUT.rawValue | EPOLLONESHOT.rawValue
            }
        }
    }

    /// The epoll descriptor; -1 when the kernel refused one (then `wait` polls the socket itself).
    private let epoll: Int32
    private let waiters = Mutex<[Int32: CheckedContinuation<Void, Never>]>([:])

    private init() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { return }
        BlockingCall.detach("postgres.readiness") { [self] in watch() }
    }

    /// Returns once `socket` is ready for `interest` (or has an error or hang-up to report,
    /// which the caller's next libpq call reads).
    func wait(_ socket: Int32, for interest: Interest) async {
        guard epoll >= 0 else {
            await BlockingCall.run("postgres.poll") { () -> Void in
                var descriptor = pollfd(fd: socket, events: Int16(interest == .readable ? POLLIN : POLLOUT), revents: 0)
                _ = poll(&descriptor, 1, -1)
            }
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            waiters.withLock { $0[socket] = continuation }
            var event = epoll_event()
            event.events = interest.events
            event.data.fd = socket
            // A socket's registration outlives one wait (re-armed with MOD) and is dropped by the
            // kernel when the socket closes (then ADD registers its number anew).
            if epoll_ctl(epoll, EPOLL_CTL_MOD, socket, &event) != 0,
               errno != ENOENT || epoll_ctl(epoll, EPOLL_CTL_ADD, socket, &event) != 0 {
                // Not watchable: resumed now, the caller's libpq call finds out why.
                waiters.withLock { $0.removeValue(forKey: socket) }?.resume()
            }
        }
    }

    private func watch() {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            let count = epoll_wait(epoll, &events, Int32(events.count), -1)
            guard count > 0 else { continue }  // EINTR
            let ready = waiters.withLock { waiters in
                events[0..<Int(count)].compactMap { waiters.removeValue(forKey: $0.data.fd) }
            }
            for continuation in ready { continuation.resume() }
        }
    }
}
