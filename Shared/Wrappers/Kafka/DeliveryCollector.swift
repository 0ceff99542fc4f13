import Synchronization

/// Collects the delivery results of one `send` call, in input order, with no allocation and
/// no lock per record: each record has a slot (its per-message opaque) in a buffer owned here.
///
/// `@unchecked Sendable`: slot `i` and result `i` are written exactly once, by whichever thread
/// completes record `i` (a delivery report, or `enqueue` when producing failed); they are read
/// only after `remaining` reached zero, and that atomic countdown (acquiring-and-releasing)
/// orders every write before the read. The continuation hand-off is under a mutex.
final class DeliveryCollector: @unchecked Sendable {
    /// The per-message opaque: which collector and which record. Holds a +1 retain of the
    /// collector from `slot(for:)` until the record completes (`release()` on every path).
    struct Slot {
        var collector: Unmanaged<DeliveryCollector>
        var index: Int
    }

    let records: [KafkaProducerRecord]
    private let slots: UnsafeMutableBufferPointer<Slot>
    private let partitions: UnsafeMutableBufferPointer<Int32>
    private let offsets: UnsafeMutableBufferPointer<Int64>
    private let remaining: Atomic<Int>
    private let errors = Mutex<[Int: KafkaError]>([:])
    private let waiter = Mutex<(done: Bool, continuation: CheckedContinuation<Void, Never>?)>((false, nil))

    init(records: [KafkaProducerRecord]) {
        self.records = records
        slots = .allocate(capacity: records.count)
        partitions = .allocate(capacity: records.count)
        offsets = .allocate(capacity: records.count)
        remaining = Atomic(records.count)
    }

    deinit {
        slots.deallocate()
        partitions.deallocate()
        offsets.deallocate()
    }

    /// The opaque for record `index`, retaining this collector until the record completes.
    func retainedSlot(for index: Int) -> UnsafeMutableRawPointer {
        (slots.baseAddress! + index).initialize(to: Slot(collector: Unmanaged.passRetained(self), index: index))
        return UnsafeMutableRawPointer(slots.baseAddress! + index)
    }

    /// Drops the retain of a slot librdkafka did not take (producing failed).
    func releaseSlot(_ index: Int) {
        slots[index].collector.release()
    }

    /// Completes a record whose opaque came from `retainedSlot(for:)`, and drops that retain
    /// (called by the delivery report callback, in `RdKafkaClient+Producer.swift`).
    static func complete(slot opaque: UnsafeMutableRawPointer, partition: Int32, offset: Int64, error: KafkaError?) {
        let slot = opaque.assumingMemoryBound(to: Slot.self).pointee
        let collector = slot.collector.takeUnretainedValue()
        collector.complete(slot.index, partition: partition, offset: offset, error: error)
        slot.collector.release()
    }

    /// Completes record `index` (exactly once per record).
    func complete(_ index: Int, partition: Int32 = -1, offset: Int64 = -1, error: KafkaError?) {
        if let error {
            errors.withLock { $0[index] = error }
        } else {
            partitions[index] = partition
            offsets[index] = offset
        }
        guard remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        let continuation = waiter.withLock { state in
            state.done = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume()
    }

    /// Suspends until every record completed, then returns the results in input order.
    func results() async -> [Result<KafkaDeliveryReport, KafkaError>] {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = waiter.withLock { state in
                if !state.done { state.continuation = continuation }
                return state.done
            }
            if done { continuation.resume() }
        }
        _ = remaining.load(ordering: .acquiring)
        let errors = self.errors.withLock { $0 }
        return records.indices.map { index in
            if let error = errors[index] { return .failure(error) }
            return .success(KafkaDeliveryReport(topic: records[index].topic, partition: partitions[index], offset: offsets[index]))
        }
    }
}
