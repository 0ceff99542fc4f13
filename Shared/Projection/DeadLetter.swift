import Contracts
import Foundation
import Kafka

extension KafkaProducerRecord {
    /// The `<topic>.dlq` record that sets `record` aside: keyed as the original, its value a
    /// `DeadLetterRecord` naming the origin (topic, partition, offset), the consumer group and why.
    public static func deadLetter(of record: KafkaConsumerRecord, group: String, error: String,
                                  at date: Date = Date()) throws -> KafkaProducerRecord {
        let letter = DeadLetterRecord(originalTopic: record.topic, partition: record.partition, offset: record.offset,
                                      consumerGroup: group, error: error, key: record.key, value: record.value, failedAt: date)
        return KafkaProducerRecord(topic: Topics.deadLetter(for: record.topic), key: record.key,
                                   value: try ContractCoding.encode(letter))
    }
}
