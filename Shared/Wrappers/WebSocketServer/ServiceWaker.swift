import CWebSockets
import HTTPRouting
import Synchronization

/// The only door into the service thread from other threads: it records what needs doing and
/// interrupts `lws_service` with `lws_cancel_service`, whose `LWS_CALLBACK_EVENT_WAIT_CANCELLED`
/// then runs on the service thread and drains the inbox.
final class ServiceWaker: Sendable {
    struct Inbox: ~Copyable {
        /// Address of the live context, or 0 before creation and after destruction (then wakes are
        /// dropped). Kept as an integer so the inbox stays `Sendable`; only `lws_cancel_service`,
        /// which lws documents as callable from any thread, is ever called with it.
        var contextAddress: UInt = 0
        var writable: [UInt64] = []
        var httpResponses: [(id: UInt64, response: HTTPResponse)] = []
        var shutdownRequested = false
        var wakePending = false
    }

    struct Work {
        var writable: [UInt64]
        var httpResponses: [(id: UInt64, response: HTTPResponse)]
        var shutdownRequested: Bool
    }

    private let inbox = Mutex(Inbox())

    /// A connection's outbox went from idle to having work.
    func scheduleWrite(connection id: UInt64) {
        update { $0.writable.append(id) }
    }

    /// Several connections went from idle to having work (a ``WebSocketSendBatch``): one wake.
    func scheduleWrites(connections ids: [UInt64]) {
        update { $0.writable.append(contentsOf: ids) }
    }

    /// The router finished an HTTP request.
    func deliver(httpResponse response: HTTPResponse, for id: UInt64) {
        update { $0.httpResponses.append((id, response)) }
    }

    func requestShutdown() {
        update { $0.shutdownRequested = true }
    }

    /// Just interrupts `lws_service` (e.g. to re-check a deadline).
    func poke() {
        update { _ in }
    }

    /// Called on the service thread once the context exists (non-nil) and before it is destroyed (nil).
    func attach(context: OpaquePointer?) {
        let address = context.map { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer($0))) } ?? 0
        inbox.withLock {
            $0.contextAddress = address
            $0.wakePending = false
        }
    }

    /// Service thread: takes everything other threads asked for since the last wake.
    func takeWork() -> Work {
        inbox.withLock { box in
            box.wakePending = false
            let work = Work(writable: box.writable, httpResponses: box.httpResponses, shutdownRequested: box.shutdownRequested)
            box.writable = []
            box.httpResponses = []
            return work
        }
    }

    var isShutdownRequested: Bool { inbox.withLock { $0.shutdownRequested } }

    private func update(_ change: (inout Inbox) -> Void) {
        inbox.withLock { box in
            change(&box)
            // The lock also keeps the context alive: `attach(context: nil)` runs before destroy.
            guard !box.wakePending, let context = OpaquePointer(bitPattern: box.contextAddress) else { return }
            box.wakePending = true
            lws_cancel_service(context)
        }
    }
}
