import Kafka
import Postgres
import Projection

/// One service's `user_erasure_outbox` rows for the shared `OutboxRelay`: the confirmations
/// go to `user.deletions.status.v1` (key: the request id) and are deleted once the broker
/// acknowledged them (a ``KeyedRecordOutbox`` over the service's rows, one publisher per
/// service at a time; a confirmation sent twice is harmless anyway).
public struct UserErasureOutbox: Outbox {
    let outbox: KeyedRecordOutbox

    public init(service: String, database: PostgresClient, producer: any KafkaRecordSender, topic: String) {
        outbox = KeyedRecordOutbox(database: database, producer: producer, table: "public.user_erasure_outbox",
                                   keyColumn: "request_id", scope: (column: "service", value: service), topic: topic,
                                   lockKey: AdvisoryLockKey.named("user-erasure-outbox:" + service))
    }

    public func publishPending(olderThan grace: Duration, limit: Int) async throws -> Int {
        try await outbox.publishPending(olderThan: grace, limit: limit)
    }
}
