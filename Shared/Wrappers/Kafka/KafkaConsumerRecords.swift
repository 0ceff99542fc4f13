/// The records of a `KafkaConsumer`, one at a time. The buffer behind it is the consumer's
/// bounded buffer (`KafkaConsumerConfiguration.bufferCapacity`): when the sequence is not
/// read, fetching pauses. The sequence ends (returns `nil`) when the consumer closes, and
/// throws if the consumer failed (`.rebalanceFailed`, `.fatal`).
public struct KafkaConsumerRecords: AsyncSequence, Sendable {
    public typealias Element = KafkaConsumerRecord
    public typealias Failure = KafkaError

    let core: ConsumerCore

    public func makeAsyncIterator() -> Iterator { Iterator(core: core) }

    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = KafkaConsumerRecord
        public typealias Failure = KafkaError

        let core: ConsumerCore

        public mutating func next() async throws(KafkaError) -> KafkaConsumerRecord? {
            try await Self.fetch(from: core)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(KafkaError) -> KafkaConsumerRecord? {
            try await Self.fetch(from: core)
        }

        private static func fetch(from core: ConsumerCore) async throws(KafkaError) -> KafkaConsumerRecord? {
            switch await core.records(wanted: 1, maxWait: nil) {
            case .success(let records):
                return records.first
            case .failure(let error) where error.code == .shutdown:
                return nil
            case .failure(let error):
                throw error
            }
        }
    }
}
