import Dispatch
import Lifecycle
import ServiceLogging
import Synchronization

/// The consumer's shared state (the handle's opaque): the bounded record buffer, current
/// assignment with hand-out positions, and tasks waiting for records.
final class ConsumerCore: RdKafkaCallbackContext {
    let logger: Logger
    let listener: (any KafkaRebalanceListener)?
    let capacity: Int
    /// How long the rebalance listener may take to supply start offsets (all attempts).
    let listenerTimeout: Duration

    typealias Batch = Result<[KafkaConsumerRecord], KafkaError>

    struct Waiter {
        let id: UInt64
        let wanted: Int
        let continuation: CheckedContinuation<Batch, Never>
        /// Past its wait with nothing buffered: served by the first record that arrives.
        var due = false
    }

    enum BackpressureAction { case none, pause, resume }

    struct PendingSeek {
        let offsets: [KafkaTopicPartition: Int64]
        let continuation: CheckedContinuation<Result<Void, KafkaError>, Never>
    }

    struct State {
        var buffer: [KafkaConsumerRecord] = []
        var head = 0
        /// Assigned partitions → offset of the next record to hand out (negative: logical start).
        var positions: [KafkaTopicPartition: Int64] = [:]
        /// Bumped on every assign/revoke; records polled under an older generation are dropped.
        var generation: UInt64 = 0
        var waiters: [Waiter] = []
        var cancelled: Set<UInt64> = []
        var nextWaiterID: UInt64 = 0
        var isClosed = false
        var failure: KafkaError?
        var isPaused = false
        /// Seeks asked for by `KafkaConsumer.seek`, performed by the poll thread between polls.
        var pendingSeeks: [PendingSeek] = []

        var count: Int { buffer.count - head }

        mutating func take(_ n: Int) -> [KafkaConsumerRecord] {
            let n = min(n, count)
            guard n > 0 else { return [] }
            let records = Array(buffer[head..<(head + n)])
            head += n
            if head == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 1024 && head * 2 > buffer.count {
                buffer.removeFirst(head)
                head = 0
            }
            for record in records { positions[record.topicPartition] = record.offset + 1 }
            return records
        }

        /// Serves waiters in order while the buffer satisfies them.
        mutating func serve() -> [(CheckedContinuation<Batch, Never>, Batch)] {
            var ready: [(CheckedContinuation<Batch, Never>, Batch)] = []
            while let first = waiters.first, count >= first.wanted || (first.due && count > 0) {
                waiters.removeFirst()
                ready.append((first.continuation, .success(take(first.wanted))))
            }
            return ready
        }

        mutating func failAll(_ error: KafkaError) -> [(CheckedContinuation<Batch, Never>, Batch)] {
            defer { waiters = [] }
            return waiters.map { ($0.continuation, .failure(error)) }
        }
    }

    let state = Mutex(State())

    init(logger: Logger, listener: (any KafkaRebalanceListener)?, capacity: Int, listenerTimeout: Duration = .seconds(30)) {
        self.logger = logger
        self.listener = listener
        self.capacity = capacity
        self.listenerTimeout = listenerTimeout
    }

    private static func resume(_ ready: [(CheckedContinuation<Batch, Never>, Batch)]) {
        for (continuation, batch) in ready { continuation.resume(returning: batch) }
    }

    var generation: UInt64 { state.withLock { $0.generation } }

    // MARK: Poll thread side

    /// Buffers records polled under `generation`, unless the assignment changed since.
    func append(_ records: [KafkaConsumerRecord], generation: UInt64) {
        guard !records.isEmpty else { return }
        let ready = state.withLock { state -> [(CheckedContinuation<Batch, Never>, Batch)] in
            guard state.generation == generation, !state.isClosed else { return [] }
            for record in records where state.positions[record.topicPartition] != nil {
                state.buffer.append(record)
            }
            return state.serve()
        }
        Self.resume(ready)
    }

    /// What the poll thread should do about the buffer level, and whether fetching is paused after it.
    func backpressureAction() -> (action: BackpressureAction, paused: Bool) {
        state.withLock { state in
            if !state.isPaused && state.count >= capacity {
                state.isPaused = true
                return (.pause, true)
            }
            if state.isPaused && state.count <= capacity / 2 {
                state.isPaused = false
                return (.resume, false)
            }
            return (.none, state.isPaused)
        }
    }

    func assigned(_ starts: [KafkaTopicPartition: Int64]) {
        state.withLock { state in
            state.positions = starts
            state.generation += 1
            state.isPaused = false
        }
    }

    /// Drops the assignment and every buffered record (eager revoke takes everything).
    func revokedAll() {
        state.withLock { state in
            state.positions = [:]
            state.buffer.removeAll()
            state.head = 0
            state.generation += 1
            state.isPaused = false
        }
    }

    func fail(_ error: KafkaError) {
        Self.resume(state.withLock { state in
            if state.failure == nil { state.failure = error }
            return state.failAll(error)
        })
    }

    func closed() {
        let seeks = state.withLock { state -> [PendingSeek] in
            defer { state.pendingSeeks = [] }
            return state.pendingSeeks
        }
        for seek in seeks { seek.continuation.resume(returning: .failure(.shutdown("seek"))) }
        Self.resume(state.withLock { state in
            state.isClosed = true
            state.buffer.removeAll()
            state.head = 0
            state.positions = [:]
            return state.failAll(.shutdown("consume"))
        })
    }

    // MARK: Caller side

    /// Waits for `wanted` records, or until `maxWait` (if any) elapsed, returning what arrived.
    /// With `idleWait` (longer than `maxWait`), a wait that ends with nothing buffered goes on
    /// until the first record arrives (returned at once) or `idleWait` elapsed in all, so an
    /// idle caller wakes every `idleWait` instead of every `maxWait`.
    func records(wanted: Int, maxWait: Duration?, idleWait: Duration? = nil) async -> Batch {
        let wanted = max(1, min(wanted, capacity))
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Batch, Never>) in
                let immediate: Batch? = state.withLock { state in
                    if state.isClosed { return .failure(.shutdown("consume")) }
                    if let failure = state.failure { return .failure(failure) }
                    if state.count >= wanted || maxWait.map({ $0 <= .zero }) == true || state.cancelled.remove(id) != nil {
                        return .success(state.take(wanted))
                    }
                    state.waiters.append(Waiter(id: id, wanted: wanted, continuation: continuation))
                    return nil
                }
                if let immediate {
                    continuation.resume(returning: immediate)
                } else if let maxWait {
                    let idleRest = idleWait.map { $0 - maxWait }.flatMap { $0 > .zero ? $0 : nil }
                    after(maxWait) { [self] in
                        guard let idleRest, markDueIfEmpty(id) else { return expire(id, rememberIfMissing: false) }
                        after(idleRest) { [self] in expire(id, rememberIfMissing: false) }
                    }
                }
            }
        } onCancel: {
            expire(id, rememberIfMissing: true)
        }
    }

    private func after(_ delay: Duration, _ work: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + delay.dispatchInterval, execute: work)
    }

    /// Marks a waiting caller due when nothing is buffered (the next record serves it);
    /// false when it is gone or records wait (then it is ended with them).
    private func markDueIfEmpty(_ id: UInt64) -> Bool {
        state.withLock { state in
            guard state.count == 0, let index = state.waiters.firstIndex(where: { $0.id == id }) else { return false }
            state.waiters[index].due = true
            return true
        }
    }

    /// Ends a waiter early with whatever is buffered.
    private func expire(_ id: UInt64, rememberIfMissing: Bool) {
        let ready: (CheckedContinuation<Batch, Never>, Batch)? = state.withLock { state in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                if rememberIfMissing { state.cancelled.insert(id) }
                return nil
            }
            let waiter = state.waiters.remove(at: index)
            return (waiter.continuation, .success(state.take(waiter.wanted)))
        }
        if let ready { Self.resume([ready]) }
    }

    var assignment: [KafkaTopicPartition] { state.withLock { $0.positions.keys.sorted() } }
    var positions: [KafkaTopicPartition: Int64] { state.withLock { $0.positions } }
}
