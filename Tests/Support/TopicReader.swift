import Foundation
import Kafka
import ServiceLogging

/// Reads a topic from the start with a fresh consumer group, for tests that check what was
/// produced.
public enum TopicReader {
    /// The first `count` records of `topic` (fewer if `timeout` passes first), in offset
    /// order per partition.
    public static func read(_ topic: String, bootstrapServers: String, count: Int,
                            timeout: Duration = .seconds(30)) async throws -> [KafkaConsumerRecord] {
        let consumer = try KafkaConsumer(configuration: KafkaConsumerConfiguration(
            bootstrapServers: bootstrapServers, groupID: "test-reader-\(UUID().uuidString)", topics: [topic]),
            rebalanceListener: nil, logger: .disabled)
        var records: [KafkaConsumerRecord] = []
        let deadline = ContinuousClock.now + timeout
        while records.count < count, ContinuousClock.now < deadline {
            records += try await consumer.nextBatch(maxRecords: 500, maxWait: .milliseconds(300))
        }
        await consumer.close()
        return records
    }
}
