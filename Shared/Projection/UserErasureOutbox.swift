import Kafka
import Postgres

/// One service's `user_erasure_outbox` rows for the shared `OutboxRelay`: the confirmations
/// go to `user.deletions.status.v1` (key: the request id) and are deleted once the broker
/// acknowledged them. Rows are taken with `FOR UPDATE SKIP LOCKED`, so two instances never
/// send the same row at once (a confirmation sent twice is harmless anyway).
public struct UserErasureOutbox: Outbox {
    let service: String
    let database: PostgresClient
    let producer: KafkaProducer
    let topic: String

    public init(service: String, database: PostgresClient, producer: KafkaProducer, topic: String) {
        self.service = service
        self.database = database
        self.producer = producer
        self.topic = topic
    }

    public func publishPending(olderThan grace: Duration, limit: Int) async throws -> Int {
        let seconds = Double(grace.components.seconds) + Double(grace.components.attoseconds) / 1e18
        let producer = self.producer
        let topic = self.topic
        let service = self.service
        return try await database.withTransaction { connection in
            let rows = try await connection.query("""
                SELECT id, request_id, value FROM public.user_erasure_outbox
                WHERE service = $1 AND created_at <= now() - make_interval(secs => $2::double precision)
                ORDER BY id LIMIT $3::bigint FOR UPDATE SKIP LOCKED
                """, [service, seconds, Int64(limit)])
            guard !rows.isEmpty else { return 0 }
            var ids: [Int64] = []
            var records: [KafkaProducerRecord] = []
            for row in rows {
                ids.append(try row.decode(Int64.self, "id"))
                records.append(KafkaProducerRecord(topic: topic, key: Array(try row.decode(String.self, "request_id").utf8),
                                                   value: Array(try row.decode(String.self, "value").utf8)))
            }
            for result in await producer.send(records) { _ = try result.get() }
            _ = try await connection.execute("DELETE FROM public.user_erasure_outbox WHERE id = ANY($1::bigint[])", [ids])
            return ids.count
        }
    }
}
