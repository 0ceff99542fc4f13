import CRdKafka
import Logging

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
                } else if let partitions {
                    // A partition paused for backpressure before a revoke must not stay paused.
                    rd_kafka_resume_partitions(rk, partitions)
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

    /// Asks the listener for start offsets, retrying twice after a failure.
    private func startOffsets(for partitions: [KafkaTopicPartition]) -> Result<[KafkaTopicPartition: Int64], KafkaError> {
        guard let listener else { return .success([:]) }
        let logger = self.logger
        return Blocking.wait {
            var lastError = ""
            for attempt in 1...3 {
                do {
                    return .success(try await listener.partitionsAssigned(partitions))
                } catch {
                    lastError = String(describing: error)
                    logger.warning("Kafka rebalance listener threw (attempt \(attempt)): \(lastError)")
                    if attempt < 3 { try? await Task.sleep(for: .seconds(1)) }
                }
            }
            return .failure(KafkaError(code: .rebalanceFailed, message: "the rebalance listener failed: \(lastError)"))
        }
    }

    static func topicPartitions(_ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?) -> [KafkaTopicPartition] {
        guard let list else { return [] }
        return (0..<Int(list.pointee.cnt)).map { index in
            let element = list.pointee.elems[index]
            return KafkaTopicPartition(topic: String(cString: element.topic), partition: element.partition)
        }
    }
}
