import Logging
import Testing
@testable import Kafka

@Suite("KafkaError")
struct KafkaErrorTests {
    @Test("an invalid configuration property is reported with its name")
    func invalidConfiguration() {
        #expect(throws: KafkaError.self) {
            _ = try KafkaProducer(configuration: .init(bootstrapServers: "127.0.0.1:1", extra: ["no.such.property": "x"]), logger: .disabled)
        }
    }
}
