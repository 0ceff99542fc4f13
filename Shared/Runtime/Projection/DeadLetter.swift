import Contracts
import Foundation
import Kafka

extension KafkaProducerRecord {
    /// The `<topic>.dlq` record that sets `record` aside: keyed as the original, its value a
    /// `DeadLetterRecord` naming the origin (topic, partition, offset), the consumer group and why.
    /// It keeps the original's headers, so its `traceparent` names the trace the record was part
    /// of (`backbone dump --trace` finds the dead letter), and a replay sends them back with it.
    public static func deadLetter(of record: KafkaConsumerRecord, group: String, error: String,
                                  at date: Date = Date()) throws -> KafkaProducerRecord {
        let letter = DeadLetterRecord(originalTopic: record.topic, partition: record.partition, offset: record.offset,
                                      consumerGroup: group, error: error, key: record.key, value: record.value, failedAt: date)
        return KafkaProducerRecord(topic: Topics.deadLetter(for: record.topic), key: record.key,
                                   value: try ContractCoding.encode(letter), headers: record.headers)
    }
}
