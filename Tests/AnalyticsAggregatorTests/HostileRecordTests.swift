import AnalyticsAggregator
import BackboneTestSupport
import Foundation
import Kafka
import Testing

@Suite("Analytics decode of hostile records")
struct AnalyticsHostileRecordTests {
    func record(_ value: [UInt8], offset: Int64 = 7) -> KafkaConsumerRecord {
        KafkaConsumerRecord(topic: "reading.events.v2", partition: 0, offset: offset, key: nil, value: value, timestamp: nil, headers: [])
    }

    @Test("every hostile value is a decode error (which the runner dead-letters), never a trap; the valid record decodes")
    func hostile() throws {
        let projection = AnalyticsProjection()
        let valid = try GoldenFixture.readingEventRecord()
        #expect(throws: Never.self) { try projection.decode(record(valid)) }
        let text = String(decoding: valid, as: UTF8.self)
        var poison = HostileRecords.shapeless()
        for field in ["userId", "activeSecondsDelta"] {
            poison += try HostileRecords.absurdField(field, in: text)
        }
        for value in poison {
            #expect(throws: (any Error).self, "\(String(decoding: value.prefix(120), as: UTF8.self))") { try projection.decode(record(value)) }
        }
    }

    @Test("the same fault at two offsets is the same error, so `backbone dlq list` counts them as one kind")
    func errorsNameTheFaultNotThePlace() throws {
        let projection = AnalyticsProjection()
        func error(_ value: String, at offset: Int64) -> String {
            do {
                _ = try projection.decode(record(Array(value.utf8), offset: offset))
                return "decoded"
            } catch {
                return "\(error)"
            }
        }
        #expect(error("{not json", at: 3) == error("{not json", at: 90_210))
        #expect(!error("{not json", at: 3).contains("kafka.offset"))
    }
}
