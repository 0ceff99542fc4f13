import ServiceLogging

extension ConsumerCore {
    /// Answers a rebalance (called by librdkafka's rebalance callback, on the poll thread,
    /// inside `consumerPoll` or `consumerClose`): asks the listener, records the new
    /// assignment or drops the old one, then (un)assigns.
    func rebalance(_ rebalance: RdKafkaRebalance) {
        let list = rebalance.partitions
        let names = list.map(\.description).joined(separator: ",")
        switch rebalance.kind {
        case .assign:
            logger.info("Kafka partitions assigned", metadata: ["kafka.partitions": names])
            switch startOffsets(for: list) {
            case .success(let starts):
                var positions: [KafkaTopicPartition: Int64] = [:]
                for partition in list {
                    positions[partition] = starts[partition] ?? RdKafkaClient.offsetBeginning
                }
                assigned(positions)
                do {
                    try rebalance.assign(positions)
                } catch {
                    fail(error)
                }
            case .failure(let error):
                logger.error("Kafka rebalance listener failed: \(error.message)", metadata: ["kafka.partitions": names])
                revokedAll()
                fail(error)
                rebalance.unassign()
            }
        case .revoke:
            logger.info("Kafka partitions revoked", metadata: ["kafka.partitions": names])
            revokedAll()
            if let listener {
                Blocking.wait { await listener.partitionsRevoked(list) }
            }
            rebalance.unassign()
        case .error(let description):
            logger.warning("Kafka rebalance error: \(description)")
            revokedAll()
            rebalance.unassign()
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
}
