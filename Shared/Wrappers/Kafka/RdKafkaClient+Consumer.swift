import CRdKafka
import Foundation

/// The consumer's librdkafka calls: group membership, the poll that hands out records (and
/// runs rebalances), seeks and the cached watermarks of `lag()`.
extension RdKafkaClient {
    /// A consumer handle whose rebalances go to `core` (inside `consumerPoll` and
    /// `consumerClose`, on the poll thread) and whose error events are logged. librdkafka's
    /// main queue is forwarded to the consumer queue (`rd_kafka_poll_set_consumer`), so that
    /// `consumerPoll` serves those events too: nothing else polls a consumer.
    static func makeConsumer(properties: [(String, String)], core: ConsumerCore) throws(KafkaError) -> RdKafkaClient {
        let client = try RdKafkaClient(type: RD_KAFKA_CONSUMER, properties: properties, context: core) { conf in
            rd_kafka_conf_set_rebalance_cb(conf, consumerRebalanceCallback)
            rd_kafka_conf_set_error_cb(conf, rdKafkaErrorCallback)
        }
        rd_kafka_poll_set_consumer(client.pointer)
        return client
    }

    /// Joins the group for `topics` (the group's assignment arrives as rebalances).
    func subscribe(topics: [String]) throws(KafkaError) {
        let list = rd_kafka_topic_partition_list_new(Int32(topics.count))
        for topic in topics {
            rd_kafka_topic_partition_list_add(list, topic, -1)
        }
        let err = rd_kafka_subscribe(pointer, list)
        rd_kafka_topic_partition_list_destroy(list)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(rdKafka: err, context: "subscribe to \(topics.joined(separator: ","))")
        }
    }

    /// Consumes exactly `offsets` (partition → start offset), outside any group.
    func assign(_ offsets: [KafkaTopicPartition: Int64]) throws(KafkaError) {
        let list = Self.makePartitionList(offsets.map { ($0.key, $0.value) })
        let err = rd_kafka_assign(pointer, list)
        rd_kafka_topic_partition_list_destroy(list)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(rdKafka: err, context: "assign \(offsets.keys.sorted().map(\.description).joined(separator: ","))")
        }
    }

    /// What one `consumerPoll` returned.
    enum Polled {
        case record(KafkaConsumerRecord)
        /// librdkafka reports that a partition's end was reached: nothing to hand out.
        case partitionEnd
        /// A consumer error (`.fatal` when the client must be replaced; `fatalError` says why).
        case failure(KafkaError)
    }

    /// Waits up to `timeout` for the next message (`nil`: none came) and copies it out of
    /// librdkafka's buffer. Rebalances run inside this call, on the calling thread, so it is
    /// called only by the consumer's poll thread.
    func consumerPoll(timeout: Duration) -> Polled? {
        guard let message = rd_kafka_consumer_poll(pointer, timeout.rdKafkaMilliseconds) else { return nil }
        defer { rd_kafka_message_destroy(message) }
        let m = message.pointee
        guard m.err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            if m.err == RD_KAFKA_RESP_ERR__PARTITION_EOF { return .partitionEnd }
            return .failure(KafkaError(rdKafka: m.err, context: "consume"))
        }
        let topic = String(cString: rd_kafka_topic_name(m.rkt))
        let key = m.key.map { Array(UnsafeRawBufferPointer(start: $0, count: m.key_len)) }
        let value = m.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: m.len)) } ?? []
        var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let milliseconds = rd_kafka_message_timestamp(message, &timestampType)
        let timestamp = milliseconds >= 0 ? Date(timeIntervalSince1970: Double(milliseconds) / 1000) : nil
        return .record(KafkaConsumerRecord(topic: topic, partition: m.partition, offset: m.offset, key: key, value: value,
                                           timestamp: timestamp, headers: Self.headers(of: message)))
    }

    private static func headers(of message: UnsafeMutablePointer<rd_kafka_message_t>) -> [KafkaHeader] {
        var list: OpaquePointer?
        guard rd_kafka_message_headers(message, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return [] }
        var headers: [KafkaHeader] = []
        var index = 0
        var name: UnsafePointer<CChar>?
        var value: UnsafeRawPointer?
        var size = 0
        while rd_kafka_header_get_all(list, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
            let bytes = value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) }
            headers.append(KafkaHeader(key: name.map { String(cString: $0) } ?? "", value: bytes))
            index += 1
        }
        return headers
    }

    /// Leaves the group (the final revoke runs inside, on the calling thread: the poll thread).
    func consumerClose() throws(KafkaError) {
        let err = rd_kafka_consumer_close(pointer)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(rdKafka: err) }
    }

    /// Moves partitions to new offsets (`rd_kafka_seek_partitions`); librdkafka discards what
    /// it prefetched for them. With `timeout` zero it returns at once, having bumped each
    /// partition's fetch version, so no later poll returns a record fetched before the seek;
    /// a partition still in progress then is not an error.
    func seek(_ offsets: [KafkaTopicPartition: Int64], timeout: Duration) throws(KafkaError) {
        let list = Self.makePartitionList(offsets.map { ($0.key, $0.value) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        if let error = rd_kafka_seek_partitions(pointer, list, timeout.rdKafkaMilliseconds) {
            let message = String(cString: rd_kafka_error_string(error))
            rd_kafka_error_destroy(error)
            throw KafkaError(code: .other, message: "seek failed: \(message)")
        }
        for index in 0..<Int(list.pointee.cnt)
        where ![RD_KAFKA_RESP_ERR_NO_ERROR, RD_KAFKA_RESP_ERR__IN_PROGRESS].contains(list.pointee.elems[index].err) {
            let element = list.pointee.elems[index]
            throw KafkaError(rdKafka: element.err, context: "seek \(String(cString: element.topic))[\(element.partition)]")
        }
    }

    /// The partition's low and high watermarks as last seen in fetch responses (no network
    /// I/O; -1 where none was seen yet).
    func cachedWatermarks(of partition: KafkaTopicPartition) throws(KafkaError) -> (low: Int64, high: Int64) {
        var low: Int64 = -1
        var high: Int64 = -1
        let err = rd_kafka_get_watermark_offsets(pointer, partition.topic, partition.partition, &low, &high)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(rdKafka: err, context: "watermarks of \(partition)") }
        return (low, high)
    }
}

/// One rebalance, as librdkafka's rebalance callback reports it: what happened, to which
/// partitions, and the (un)assignment that answers it. The callback must answer with
/// `assign` or `unassign` before it returns, and the pointers are valid only until then: a
/// value must not leave the callback (hence not `Sendable`).
struct RdKafkaRebalance {
    enum Kind {
        case assign
        case revoke
        /// A failed rebalance (librdkafka's description): the member drops its assignment.
        case error(String)
    }

    let kind: Kind
    /// The partitions of the rebalance, in librdkafka's order.
    let partitions: [KafkaTopicPartition]
    private let handle: OpaquePointer
    private let list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?

    fileprivate init(handle: OpaquePointer, err: rd_kafka_resp_err_t, list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?) {
        switch err {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS: kind = .assign
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS: kind = .revoke
        default: kind = .error(String(cString: rd_kafka_err2str(err)))
        }
        self.handle = handle
        self.list = list
        self.partitions = list.map { list in
            (0..<Int(list.pointee.cnt)).map { index in
                let element = list.pointee.elems[index]
                return KafkaTopicPartition(topic: String(cString: element.topic), partition: element.partition)
            }
        } ?? []
    }

    /// Assigns the rebalance's partitions, each from its offset in `offsets` (earliest where
    /// it has none).
    func assign(_ offsets: [KafkaTopicPartition: Int64]) throws(KafkaError) {
        if let list {
            for (index, partition) in partitions.enumerated() {
                list.pointee.elems[index].offset = offsets[partition] ?? RdKafkaClient.offsetBeginning
            }
        }
        let err = rd_kafka_assign(handle, list)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(rdKafka: err, context: "assign \(partitions.map(\.description).joined(separator: ","))")
        }
    }

    /// Drops the member's assignment (its result is not checked: there is nothing left to undo).
    func unassign() {
        rd_kafka_assign(handle, nil)
    }
}

/// librdkafka's rebalance callback, called on the consumer's poll thread (inside
/// `consumerPoll` or `consumerClose`); `opaque` is the consumer's `ConsumerCore`.
private func consumerRebalanceCallback(_ rk: OpaquePointer?, _ err: rd_kafka_resp_err_t,
                                       _ partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?,
                                       _ opaque: UnsafeMutableRawPointer?) {
    guard let rk, let opaque else { return }
    let core = Unmanaged<ConsumerCore>.fromOpaque(opaque).takeUnretainedValue()
    core.rebalance(RdKafkaRebalance(handle: rk, err: err, list: partitions))
}
