/// A record header: a key and an optional value.
public struct KafkaHeader: Hashable, Sendable {
    public var key: String
    public var value: [UInt8]?

    public init(key: String, value: [UInt8]?) {
        self.key = key
        self.value = value
    }
}

/// A record to produce. Records with the same key go to the same partition (in order).
public struct KafkaProducerRecord: Sendable {
    public var topic: String
    /// An explicit partition, or `nil` to let the partitioner choose by key.
    public var partition: Int32?
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]

    public init(topic: String, partition: Int32? = nil, key: [UInt8]? = nil, value: [UInt8], headers: [KafkaHeader] = []) {
        self.topic = topic
        self.partition = partition
        self.key = key
        self.value = value
        self.headers = headers
    }
}

/// The broker's acknowledgement of a produced record.
public struct KafkaDeliveryReport: Hashable, Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64

    public init(topic: String, partition: Int32, offset: Int64) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
    }
}

/// A record the broker acknowledged, with where it was stored.
public struct KafkaDelivery: Sendable {
    public var record: KafkaProducerRecord
    public var report: KafkaDeliveryReport

    public init(record: KafkaProducerRecord, report: KafkaDeliveryReport) {
        self.record = record
        self.report = report
    }
}

/// Keeps a durable copy of what a producer delivered, before the producer tells its caller —
/// for a broker that does not keep records itself (the embedded broker of `backbone dev`, whose
/// records go with its process). Headers are not part of the copy.
public protocol KafkaDeliveryJournal: Sendable {
    /// Keeps `deliveries` (acknowledged records, in send order). A throw makes the producer
    /// report them as failed (`KafkaError.Code.journalUnavailable`).
    func keep(_ deliveries: [KafkaDelivery]) async throws
}
