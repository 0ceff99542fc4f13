import CRdKafka
@testable import Kafka
import ServiceLogging
import Testing

@Suite("Kafka errors and configuration")
struct KafkaErrorTests {
    @Test("an invalid configuration property is reported with its name")
    func invalidConfiguration() {
        do {
            _ = try KafkaProducer(configuration: .init(bootstrapServers: "127.0.0.1:1", extra: ["no.such.property": "x"]),
                                  logger: .disabled)
            Issue.record("an unknown property was accepted")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains("no.such.property"))
        }
    }

    @Test("librdkafka errors map to stable codes with retriability")
    func errorMapping() {
        let timedOut = KafkaError(rdKafka: RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, context: "delivery")
        #expect(timedOut.code == .messageTimedOut && timedOut.isRetriable && !timedOut.isFatal)
        #expect(timedOut.rdKafkaCode == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT.rawValue)
        #expect(timedOut.description.contains("message_timed_out"))
        #expect(KafkaError(rdKafka: RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN).code == .brokerUnavailable)
        #expect(KafkaError(rdKafka: RD_KAFKA_RESP_ERR__FATAL).isFatal)
        #expect(!KafkaError(rdKafka: RD_KAFKA_RESP_ERR__FATAL).isRetriable)
        #expect(KafkaError(rdKafka: RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART).code == .unknownTopic)
        #expect(KafkaError(rdKafka: RD_KAFKA_RESP_ERR__PURGE_QUEUE).code == .shutdown)
        #expect(KafkaError(rdKafka: RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS).code == .topicAlreadyExists)
    }

    @Test("the producer is idempotent with acks=all and the delivery timeout in milliseconds by default")
    func producerDefaults() {
        let configuration = KafkaProducerConfiguration(bootstrapServers: "b:9092", deliveryTimeout: .milliseconds(5_500),
                                                       extra: ["linger.ms": "20"])
        let properties = configuration.properties
        #expect(properties.contains { $0 == ("enable.idempotence", "true") })
        #expect(properties.contains { $0 == ("acks", "all") })
        #expect(properties.contains { $0 == ("message.timeout.ms", "5500") })
        // Raw properties come last, so they override the typed fields.
        #expect(properties.last { $0.0 == "linger.ms" }?.1 == "20")
    }

    @Test("the consumer never auto-commits and uses an eager assignment strategy")
    func consumerDefaults() {
        let properties = KafkaConsumerConfiguration(bootstrapServers: "b:9092", groupID: "g", topics: ["t"],
                                                    assignmentStrategy: .roundRobin).properties
        #expect(properties.contains { $0 == ("enable.auto.commit", "false") })
        #expect(properties.contains { $0 == ("enable.auto.offset.store", "false") })
        #expect(properties.contains { $0 == ("partition.assignment.strategy", "roundrobin") })
        #expect(properties.contains { $0 == ("auto.offset.reset", "earliest") })
    }
}
