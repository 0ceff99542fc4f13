import Contracts
import Kafka
import Lifecycle
import Projection
import PrometheusMetrics
import ServiceLogging

/// Reads `realtime.sequenced.v1` in full (its own consumer group, starting at the end: a
/// fresh subscription catches up from the history) and hands every event to the hub.
///
/// A record that is not a sequenced event (only a hostile producer writes one: the sequencer
/// encodes every record it publishes) is skipped and set aside in `realtime.sequenced.v1.dlq`
/// by every instance that reads it, each naming its own group and counting it in
/// `projection_dead_letters_total{group}`, as the projections do (the DeadLettersReceived alert).
struct LiveEventConsumer: Sendable {
    /// Starts every assigned partition at its end, and tells the hub joins may proceed.
    struct StartAtEnd: KafkaRebalanceListener {
        let hub: SubscriptionHub

        func partitionsAssigned(_ partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64] {
            defer { hub.markLive() }
            return Dictionary(uniqueKeysWithValues: partitions.map { ($0, Int64(-1)) })
        }

        func partitionsRevoked(_ partitions: [KafkaTopicPartition]) async {}
    }

    let bootstrapServers: String
    let topic: String
    let groupID: String
    /// librdkafka properties of the consumer (`RealtimeConfiguration.consumerProperties`).
    let consumerProperties: [String: String]
    let hub: SubscriptionHub
    /// Where undecodable records are set aside.
    let deadLetters: any KafkaRecordSender
    let metrics: MetricsRegistry
    let logger: Logger

    /// Reads until cancelled; dead letters still being sent are waited for before it returns.
    func run() async throws {
        let deadLettering = TaskSet()
        try await deadLettering.scope(cancelling: false) { try await consume(setAside: deadLettering) }
    }

    private func consume(setAside deadLettering: TaskSet) async throws {
        let configuration = KafkaConsumerConfiguration(
            bootstrapServers: bootstrapServers, groupID: groupID, topics: [topic], clientID: groupID, sessionTimeout: .seconds(6),
            extra: consumerProperties)
        let consumer = try await KafkaClients.open { [self] () throws(KafkaError) in
            try KafkaConsumer(configuration: configuration, rebalanceListener: StartAtEnd(hub: hub), logger: logger)
        }
        logger.info("live event consumer started", metadata: ["kafka.topic": topic, "kafka.group": groupID])
        do {
            while !Task.isCancelled {
                var records = try await consumer.nextBatch(maxRecords: 2_000, maxWait: .zero)
                if records.isEmpty {
                    records = try await consumer.nextBatch(maxRecords: 1, maxWait: .milliseconds(100))
                    if records.isEmpty { continue }
                }
                var events: [SequencedChannelEvent] = []
                var poison: [KafkaProducerRecord] = []
                events.reserveCapacity(records.count)
                for record in records {
                    do {
                        var event = try SequencedEventJSON.event(record.value)
                        event.trace = record.trace
                        events.append(event)
                    } catch {
                        logger.warning("undecodable sequenced event skipped",
                                       metadata: ["kafka.offset": "\(record.offset)", "error": "\(error)"])
                        if let letter = try? KafkaProducerRecord.deadLetter(of: record, group: groupID, error: "decode failed: \(error)") {
                            poison.append(letter)
                        }
                    }
                }
                hub.deliver(events)
                for event in events {
                    guard let trace = event.trace, trace.sampled else { continue }
                    logger.info("traced event pushed to the channel's subscribers", metadata: [
                        "trace_id": trace.traceID, "realtime.channel": event.channel, "realtime.event": event.event,
                        "realtime.seq": "\(event.seq)"])
                }
                if !poison.isEmpty { setAside(poison, on: deadLettering) }
            }
        } catch {
            await consumer.close()
            if Task.isCancelled { return }
            throw error
        }
        await consumer.close()
    }

    /// Sends the dead letters without holding up delivery, counting those the broker took; a
    /// failed send is logged (the live consumer keeps no stored position to retry from, and the
    /// record is skipped either way).
    func setAside(_ letters: [KafkaProducerRecord], on deadLettering: TaskSet) {
        let producer = deadLetters
        let (metrics, group, logger) = (metrics, groupID, logger)
        deadLettering.spawn {
            var sent = 0
            for result in await producer.send(letters) {
                if case .failure(let error) = result {
                    logger.error("dead-lettering a sequenced record failed", metadata: ["error": "\(error)"])
                } else {
                    sent += 1
                }
            }
            metrics.increment("projection_dead_letters_total", by: Double(sent), labels: ["group": group])
        }
    }
}
