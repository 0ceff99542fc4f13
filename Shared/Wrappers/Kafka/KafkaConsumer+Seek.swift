import Synchronization

extension KafkaConsumer {
    /// Moves assigned partitions to new offsets (negative: the partition's earliest offset).
    /// Records of those partitions fetched before the seek are discarded, buffered or not;
    /// records handed out afterwards start at the new offsets. Partitions not assigned to
    /// this member are left alone. Returns once the poll thread performed the seek.
    public func seek(_ offsets: [KafkaTopicPartition: Int64]) async throws(KafkaError) {
        guard !offsets.isEmpty else { return }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, KafkaError>, Never>) in
            let closed = core.state.withLock { state -> Bool in
                if state.isClosed { return true }
                state.pendingSeeks.append(ConsumerCore.PendingSeek(offsets: offsets, continuation: continuation))
                return false
            }
            if closed { continuation.resume(returning: .failure(.shutdown("seek"))) }
        }
        try result.get()
    }
}

extension ConsumerCore {
    func takePendingSeeks() -> [PendingSeek] {
        state.withLock { state in
            defer { state.pendingSeeks = [] }
            return state.pendingSeeks
        }
    }

    /// After a seek: drops the buffered records of the moved partitions and hands out from
    /// the new offsets.
    func sought(_ offsets: [KafkaTopicPartition: Int64]) {
        state.withLock { state in
            let kept = state.buffer[state.head...].filter { offsets[$0.topicPartition] == nil }
            state.buffer = Array(kept)
            state.head = 0
            for (partition, offset) in offsets where state.positions[partition] != nil { state.positions[partition] = offset }
        }
    }
}

extension ConsumerPollLoop {
    /// Seeks the assigned partitions among `offsets` (librdkafka discards what it prefetched
    /// for them), then drops their buffered records.
    func performSeek(_ offsets: [KafkaTopicPartition: Int64]) throws(KafkaError) {
        let assigned = core.positions
        let moves = offsets.filter { assigned[$0.key] != nil }.mapValues { $0 < 0 ? RdKafkaClient.offsetBeginning : $0 }
        guard !moves.isEmpty else { return }
        // Asynchronous (timeout 0): librdkafka bumps each partition's version at once, so
        // nothing fetched before the seek is returned by a later poll.
        try client.seek(moves, timeout: .zero)
        core.sought(moves)
    }
}
