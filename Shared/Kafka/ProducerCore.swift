import CRdKafka
import Logging
import Synchronization

/// The producer's shared state and callback context (the handle's opaque): lifecycle,
/// in-progress `produce` calls, and tasks waiting for queue space.
final class ProducerCore: RdKafkaCallbackContext {
    let logger: Logger

    private struct State {
        var isShuttingDown = false
        var activeCalls = 0
        var spaceWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    init(logger: Logger) { self.logger = logger }

    /// Registers an in-progress produce call; `false` once shutdown began.
    func beginCall() -> Bool {
        state.withLock { state in
            guard !state.isShuttingDown else { return false }
            state.activeCalls += 1
            return true
        }
    }

    func endCall() { state.withLock { $0.activeCalls -= 1 } }

    var hasActiveCalls: Bool { state.withLock { $0.activeCalls > 0 } }

    /// Marks the producer as shutting down; `false` if it already was.
    func beginShutdown() -> Bool {
        let waiters: [CheckedContinuation<Void, Never>]? = state.withLock { state in
            guard !state.isShuttingDown else { return nil }
            state.isShuttingDown = true
            defer { state.spaceWaiters = [] }
            return state.spaceWaiters
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume() }
        return true
    }

    /// Suspends until the poll thread has served delivery reports (freeing queue space).
    func waitForQueueSpace() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state in
                if state.isShuttingDown { return true }
                state.spaceWaiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func wakeBackpressureWaiters() {
        let waiters = state.withLock { state in
            defer { state.spaceWaiters = [] }
            return state.spaceWaiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// Collects the delivery results of one `send` call, in input order.
final class DeliveryCollector: Sendable {
    private struct State {
        var results: [Result<KafkaDeliveryReport, KafkaError>?]
        var remaining: Int
        var continuation: CheckedContinuation<[Result<KafkaDeliveryReport, KafkaError>], Never>?
    }

    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(results: Array(repeating: nil, count: count), remaining: count, continuation: nil))
    }

    func complete(_ index: Int, with result: Result<KafkaDeliveryReport, KafkaError>) {
        let ready: (CheckedContinuation<[Result<KafkaDeliveryReport, KafkaError>], Never>, [Result<KafkaDeliveryReport, KafkaError>])? =
            state.withLock { state in
                state.results[index] = result
                state.remaining -= 1
                guard state.remaining == 0, let continuation = state.continuation else { return nil }
                state.continuation = nil
                return (continuation, state.results.map { $0! })
            }
        if let (continuation, results) = ready { continuation.resume(returning: results) }
    }

    /// Suspends until every slot completed.
    func results() async -> [Result<KafkaDeliveryReport, KafkaError>] {
        await withCheckedContinuation { continuation in
            let done: [Result<KafkaDeliveryReport, KafkaError>]? = state.withLock { state in
                guard state.remaining == 0 else {
                    state.continuation = continuation
                    return nil
                }
                return state.results.map { $0! }
            }
            if let done { continuation.resume(returning: done) }
        }
    }
}

/// One message's slot in a collector: the per-message opaque, retained while librdkafka owns
/// the message and released by the delivery callback (or by `enqueue` when produce fails).
final class DeliveryBox: Sendable {
    let collector: DeliveryCollector
    let index: Int
    let topic: String

    init(collector: DeliveryCollector, index: Int, topic: String) {
        self.collector = collector
        self.index = index
        self.topic = topic
    }
}

/// librdkafka's delivery report callback, called on the poll thread inside `rd_kafka_poll`.
func producerDeliveryCallback(_ rk: OpaquePointer?, _ message: UnsafePointer<rd_kafka_message_t>?, _ opaque: UnsafeMutableRawPointer?) {
    guard let message, let slot = message.pointee._private else { return }
    let box = Unmanaged<DeliveryBox>.fromOpaque(slot).takeRetainedValue()
    let report = message.pointee
    if report.err == RD_KAFKA_RESP_ERR_NO_ERROR {
        box.collector.complete(box.index, with: .success(KafkaDeliveryReport(topic: box.topic, partition: report.partition, offset: report.offset)))
    } else {
        let error = KafkaError(rdKafka: report.err, context: "delivery to \(box.topic)")
        box.collector.complete(box.index, with: .failure(error))
    }
}
