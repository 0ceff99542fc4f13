import CRdKafka
import ServiceLogging

/// librdkafka's rebalance callback, called on the consumer's poll thread (inside
/// `rd_kafka_consumer_poll` or `rd_kafka_consumer_close`).
func consumerRebalanceCallback(_ rk: OpaquePointer?, _ err: rd_kafka_resp_err_t,
                               _ partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?,
                               _ opaque: UnsafeMutableRawPointer?) {
    guard let rk, let opaque else { return }
    let core = Unmanaged<ConsumerCore>.fromOpaque(opaque).takeUnretainedValue()
    core.rebalance(rk, err, partitions)
}

extension ConsumerCore {
    func rebalance(_ rk: OpaquePointer, _ err: rd_kafka_resp_err_t,
                   _ partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?) {
        let list = Self.topicPartitions(partitions)
        let names = list.map(\.description).joined(separator: ",")
        switch err {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            logger.info("Kafka partitions assigned", metadata: ["kafka.partitions": names])
            switch startOffsets(for: list) {
            case .success(let starts):
                var positions: [KafkaTopicPartition: Int64] = [:]
                if let partitions {
                    for index in 0..<Int(partitions.pointee.cnt) {
                        let partition = list[index]
                        let offset = starts[partition] ?? crdkafka_offset_beginning()
                        partitions.pointee.elems[index].offset = offset
                        positions[partition] = offset
                    }
                }
                assigned(positions)
                let assignErr = rd_kafka_assign(rk, partitions)
                if assignErr != RD_KAFKA_RESP_ERR_NO_ERROR {
                    fail(KafkaError(rdKafka: assignErr, context: "assign \(names)"))
                }
            case .failure(let error):
                logger.error("Kafka rebalance listener failed: \(error.message)", metadata: ["kafka.partitions": names])
                revokedAll()
                fail(error)
                rd_kafka_assign(rk, nil)
            }
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
            logger.info("Kafka partitions revoked", metadata: ["kafka.partitions": names])
            revokedAll()
            if let listener {
                Blocking.wait { await listener.partitionsRevoked(list) }
            }
            rd_kafka_assign(rk, nil)
        default:
            logger.warning("Kafka rebalance error: \(String(cString: rd_kafka_err2str(err)))")
            revokedAll()
            rd_kafka_assign(rk, nil)
        }
    }

    /// Asks the listener for start offsets, retrying twice after a failure, for at most
    /// `listenerTimeout` in all: this runs inside librdkafka's rebalance callback, and a
    /// callback that outlasts the group's patience leaves a member holding an assignment of
    /// a generation that is gone. Past the limit the listener is cancelled and the consumer
    /// fails with `.rebalanceFailed` (its owner replaces it).
    private func startOffsets(for partitions: [KafkaTopicPartition]) -> Result<[KafkaTopicPartition: Int64], KafkaError> {
        guard let listener else { return .success([:]) }
        let logger = self.logger
        let limit = listenerTimeout
        let (result, cancelled) = Blocking.wait(limit: limit) { () -> Result<[KafkaTopicPartition: Int64], KafkaError> in
            var lastError = ""
            for attempt in 1...3 {
                do {
                    return .success(try await listener.partitionsAssigned(partitions))
                } catch {
                    lastError = String(describing: error)
                    if Task.isCancelled { break }
                    logger.warning("Kafka rebalance listener threw (attempt \(attempt)): \(lastError)")
                    if attempt < 3 { try? await Task.sleep(for: .seconds(1)) }
                }
            }
            return .failure(KafkaError(code: .rebalanceFailed, message: "the rebalance listener failed: \(lastError)"))
        }
        if cancelled {
            return .failure(KafkaError(code: .rebalanceFailed, message: "the rebalance listener did not finish within \(limit)"))
        }
        return result
    }

    static func topicPartitions(_ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?) -> [KafkaTopicPartition] {
        guard let list else { return [] }
        return (0..<Int(list.pointee.cnt)).map { index in
            let element = list.pointee.elems[index]
            return KafkaTopicPartition(topic: String(cString: element.topic), partition: element.partition)
        }
    }
}
