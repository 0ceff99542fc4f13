import Kafka
import Lifecycle
import Postgres
import ServiceLogging

/// An outbox table of ready-made Kafka records — `(id bigserial, <key> text, value text,
/// created_at timestamptz)`, the record key in `keyColumn` (`room_id` by default) — for the
/// shared ``OutboxRelay``: the entries go to `topic` in id order and are deleted once the
/// broker acknowledged them. `scope` limits it to the rows of one owner in a shared table
/// (`service = 'ingest'`). One publisher at a time across every instance (a transaction
/// advisory lock on `lockKey`), so the records of one key are never published out of order.
/// With `traceColumn`, a row's `traceparent` there goes out as the record's header.
public struct KeyedRecordOutbox: Outbox {
    let database: PostgresClient
    let producer: any KafkaRecordSender
    let table: String
    let keyColumn: String
    let scope: (column: String, value: String)?
    let topic: String
    let lockKey: Int64
    let traceColumn: String?

    public init(database: PostgresClient, producer: any KafkaRecordSender, table: String, keyColumn: String = "room_id",
                scope: (column: String, value: String)? = nil, topic: String, lockKey: Int64, traceColumn: String? = nil) {
        self.traceColumn = traceColumn
        self.database = database
        self.producer = producer
        self.table = table
        self.keyColumn = keyColumn
        self.scope = scope
        self.topic = topic
        self.lockKey = lockKey
    }

    public func publishPending(olderThan grace: Duration, limit: Int) async throws -> Int {
        let seconds = grace.timeInterval
        let producer = self.producer
        let (table, keyColumn, topic, lockKey) = (self.table, self.keyColumn, self.topic, self.lockKey)
        let scope = self.scope
        let traceColumn = self.traceColumn
        return try await database.withTransaction { connection in
            let lock = try await connection.query("SELECT pg_try_advisory_xact_lock($1::bigint) AS locked", [lockKey])
            guard try lock.first?.decode(Bool.self, "locked") == true else { return 0 }
            var binds: [any PostgresBindable] = [seconds, Int64(limit)]
            if let scope { binds.append(scope.value) }
            let rows = try await connection.query("""
                SELECT id, \(keyColumn) AS record_key, value\(traceColumn.map { ", \($0) AS traceparent" } ?? "") FROM \(table)
                WHERE \(scope.map { "\($0.column) = $3 AND " } ?? "")created_at <= now() - make_interval(secs => $1::double precision)
                ORDER BY id LIMIT $2::bigint
                """, binds)
            guard !rows.isEmpty else { return 0 }
            var ids: [Int64] = []
            var records: [KafkaProducerRecord] = []
            for row in rows {
                ids.append(try row.decode(Int64.self, "id"))
                let trace = traceColumn == nil ? nil : try row.decode(String?.self, "traceparent").flatMap(TraceContext.init(traceparent:))
                records.append(KafkaProducerRecord(topic: topic, key: Array(try row.decode(String.self, "record_key").utf8),
                                                   value: Array(try row.decode(String.self, "value").utf8),
                                                   headers: trace.map { [.trace($0)] } ?? []))
            }
            for result in await producer.send(records) { _ = try result.get() }
            _ = try await connection.execute("DELETE FROM \(table) WHERE id = ANY($1::bigint[])", [ids])
            return ids.count
        }
    }
}
