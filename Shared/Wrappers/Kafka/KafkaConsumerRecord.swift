import Foundation
import ServiceLogging

/// A record read by a `KafkaConsumer`.
public struct KafkaConsumerRecord: Sendable, Hashable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var key: [UInt8]?
    public var value: [UInt8]
    /// The record's timestamp (create or log-append time), if the broker provided one.
    public var timestamp: Date?
    public var headers: [KafkaHeader]

    public init(topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8],
                timestamp: Date?, headers: [KafkaHeader]) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.headers = headers
    }

    public var topicPartition: KafkaTopicPartition { KafkaTopicPartition(topic: topic, partition: partition) }

    /// The trace the record carries (`traceparent` header), if any.
    public var trace: TraceContext? { headers.trace }
}
