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

    let database: PostgresClient
    let producer: KafkaProducer
    let topic: String

    public init(database: PostgresClient, producer: KafkaProducer, topic: String) {
        self.database = database
        self.producer = producer
        self.topic = topic
    }

    public func publishPending(olderThan grace: Duration, limit: Int) async throws -> Int {
        let seconds = Double(grace.components.seconds) + Double(grace.components.attoseconds) / 1e18
        let producer = self.producer
        let topic = self.topic
        return try await database.withTransaction { connection in
            let lock = try await connection.query("SELECT pg_try_advisory_xact_lock($1::bigint) AS locked", [Self.lockKey])
            guard try lock.first?.decode(Bool.self, "locked") == true else { return 0 }
            let rows = try await connection.query("""
                SELECT id, room_id, value FROM transcode_status_outbox
                WHERE created_at <= now() - make_interval(secs => $1::double precision)
                ORDER BY id LIMIT $2::bigint
                """, [seconds, Int64(limit)])
            guard !rows.isEmpty else { return 0 }
            var ids: [Int64] = []
            var records: [KafkaProducerRecord] = []
            for row in rows {
                ids.append(try row.decode(Int64.self, "id"))
                records.append(KafkaProducerRecord(topic: topic, key: Array(try row.decode(String.self, "room_id").utf8),
                                                   value: Array(try row.decode(String.self, "value").utf8)))
            }
            for result in await producer.send(records) { _ = try result.get() }
            _ = try await connection.execute("DELETE FROM transcode_status_outbox WHERE id = ANY($1::bigint[])", [ids])
            return ids.count
        }
    }
}
