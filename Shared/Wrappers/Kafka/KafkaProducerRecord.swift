import ServiceLogging
/// A record header: a key and an optional value.
public struct KafkaHeader: Hashable, Sendable {
    public var key: String
    public var value: [UInt8]?

    public init(key: String, value: [UInt8]?) {
        self.key = key
        self.value = value
    }

    /// The `traceparent` header carrying `trace` (W3C Trace Context, as on HTTP).
    public static func trace(_ trace: TraceContext) -> KafkaHeader {
        KafkaHeader(key: TraceContext.header, value: Array(trace.traceparent.utf8))
    }
}

extension KafkaProducerRecord {
    /// The record with a `traceparent` header for `trace`, unless it has one already.
    public func carrying(_ trace: TraceContext) -> KafkaProducerRecord {
        guard !headers.contains(where: { $0.key == TraceContext.header }) else { return self }
        var record = self
        record.headers.append(.trace(trace))
        return record
    }
}

extension [KafkaHeader] {
    /// The trace of a `traceparent` header, if one holds a valid value.
    public var trace: TraceContext? {
        guard let value = first(where: { $0.key == TraceContext.header })?.value else { return nil }
        return TraceContext(traceparent: value)
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
