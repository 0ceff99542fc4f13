import Contracts
import Kafka
import Postgres
import Projection

/// `transcode_status_outbox` for the shared `OutboxRelay`: the entries go to
/// `room.transcode.status.v1` (key: room id) in id order and are deleted once the broker
/// acknowledged them. One publisher at a time across every worker instance (a transaction
/// advisory lock), so a version's statuses are never published out of order.
public struct TranscodeStatusOutbox: Outbox {
    static let lockKey: Int64 = 0x7472_616e_7363_6f64 // "transcod"

    let outbox: KeyedRecordOutbox

    public init(database: PostgresClient, producer: any KafkaRecordSender, topic: String) {
        outbox = KeyedRecordOutbox(database: database, producer: producer, table: "transcode_status_outbox", topic: topic,
                                   lockKey: Self.lockKey, traceColumn: "traceparent")
    }

    public func publishPending(olderThan grace: Duration, limit: Int) async throws -> Int {
        try await outbox.publishPending(olderThan: grace, limit: limit)
    }
}
