import Contracts
import Foundation
import Kafka
import Postgres

/// Publishes sequenced events to `realtime.sequenced.v1` (key: channel) and marks their
/// history rows published once the broker acknowledged them.
public struct SequencedPublisher: Sendable {
    let producer: KafkaProducer
    let database: PostgresClient
    let topic: String

    public init(producer: KafkaProducer, database: PostgresClient, topic: String = Topics.realtimeSequenced) {
        self.producer = producer
        self.database = database
        self.topic = topic
    }

    /// Sends every event; throws the first failure after marking the acknowledged ones.
    public func publish(_ events: [SequencedChannelEvent]) async throws {
        guard !events.isEmpty else { return }
        let records = try events.map {
            KafkaProducerRecord(topic: topic, key: Array($0.channel.utf8), value: try ContractCoding.encode($0))
        }
        var acknowledged: [SequencedChannelEvent] = []
        var failure: (any Error)?
        for (event, result) in zip(events, await producer.send(records)) {
            switch result {
            case .success: acknowledged.append(event)
            case .failure(let error): failure = failure ?? error
            }
        }
        if !acknowledged.isEmpty {
            _ = try await database.execute(RealtimeSQL.markPublished, [acknowledged.map(\.channel), acknowledged.map(\.seq)])
        }
        if let failure { throw failure }
    }
}
