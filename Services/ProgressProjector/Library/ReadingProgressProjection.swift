import Contracts
import Foundation
import Kafka
import Postgres
import Projection

/// A record of `reading.events.v2` that cannot be projected.
struct InvalidReadingEvent: Error, CustomStringConvertible {
    let description: String
}

/// The reading-progress read model: per (user, material) status, latest position, percent,
/// active seconds and read times, from the reading-event stream.
///
/// Every rule is order-independent, so late, duplicated and interleaved events give the
/// state of the in-order stream: the position is the one of the latest event by
/// (clientTimestamp, sequence, eventId); `markedAsRead` completes for good; active seconds
/// sum over distinct events (the event log's unique `event_id` drops repeats).
public struct ReadingProgressProjection: Projection {
    public typealias Event = ReadingEventRecord
    public typealias Effects = [ReadingProgressChanged]

    let producer: KafkaProducer
    let progressTopic: String

    public init(producer: KafkaProducer, progressTopic: String = Topics.readingProgress) {
        self.producer = producer
        self.progressTopic = progressTopic
    }

    public func decode(_ record: KafkaConsumerRecord) throws -> ReadingEventRecord {
        let event = try ContractCoding.decode(ReadingEventRecord.self, from: record.value)
        guard event.schemaVersion == ReadingEventRecord.currentSchemaVersion else {
            throw InvalidReadingEvent(description: "unsupported schemaVersion \(event.schemaVersion)")
        }
        guard !event.userId.isEmpty, !event.eventId.isEmpty, !event.materialId.isEmpty else {
            throw InvalidReadingEvent(description: "userId, eventId and materialId are required")
        }
        if let position = event.position, !position.isValid {
            throw InvalidReadingEvent(description: "position is not one of the accepted forms")
        }
        guard event.activeSecondsDelta >= 0, event.activeSecondsDelta <= 3600 else {
            throw InvalidReadingEvent(description: "activeSecondsDelta out of range")
        }
        return event
    }

    public func apply(_ events: [ProjectedEvent<ReadingEventRecord>], in connection: PostgresConnection) async throws -> [ReadingProgressChanged] {
        guard !events.isEmpty else { return [] }
        let fresh = try await insertIntoLog(events, connection)
        guard !fresh.isEmpty else { return [] }
        return try await upsertProgress(ProgressDelta.fold(fresh), connection)
    }

    /// The changes of batches committed while a publish was waiting for its acknowledgements
    /// go out together, in commit order.
    public func combine(_ effects: [[ReadingProgressChanged]]) -> [[ReadingProgressChanged]] {
        effects.count > 1 ? [effects.flatMap { $0 }] : effects
    }

    public func afterCommit(_ effects: [ReadingProgressChanged]) async throws {
        guard !effects.isEmpty else { return }
        let records = try effects.map {
            KafkaProducerRecord(topic: progressTopic, key: Array($0.userId.utf8), value: try ContractCoding.encode($0))
        }
        for result in await producer.send(records) { _ = try result.get() }
    }

    /// Inserts the batch into the event log; returns the events not seen before (first
    /// occurrence of each id).
    func insertIntoLog(_ events: [ProjectedEvent<ReadingEventRecord>], _ connection: PostgresConnection) async throws -> [ReadingEventRecord] {
        let e = events.map(\.event)
        let rows = try await connection.query("""
            INSERT INTO progress_event_log (event_id, user_id, material_id, client_session_id, event_type, client_timestamp,
                                            sequence, active_seconds_delta, kafka_partition, kafka_offset)
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[],
                                 $7::bigint[], $8::int[], $9::int[], $10::bigint[])
            ON CONFLICT (event_id) DO NOTHING
            RETURNING event_id
            """, [e.map(\.eventId), e.map(\.userId), e.map(\.materialId), e.map(\.clientSessionId), e.map(\.eventType.rawValue),
                  e.map { ContractCoding.formatTimestamp($0.clientTimestamp) }, e.map { Int64($0.sequence) },
                  e.map { Int64($0.activeSecondsDelta) }, events.map { Int64($0.partition) }, events.map(\.offset)])
        var inserted = Set<String>()
        for row in rows { inserted.insert(try row.decode(String.self, "event_id")) }
        var seen = Set<String>()
        return e.filter { inserted.contains($0.eventId) && seen.insert($0.eventId).inserted }
    }

    func upsertProgress(_ deltas: [ProgressDelta], _ connection: PostgresConnection) async throws -> [ReadingProgressChanged] {
        func ts(_ d: Date?) -> String { d.map(ContractCoding.formatTimestamp) ?? "" }
        let positions = try deltas.map { d -> String in
            guard let p = d.position?.position else { return "" }
            return String(decoding: try ContractCoding.encode(p), as: UTF8.self)
        }
        let rows = try await connection.query(ProgressSQL.upsert, [
            deltas.map(\.userID), deltas.map(\.materialID), deltas.map { Int64($0.activeSeconds) },
            deltas.map { ts($0.firstRead) }, deltas.map { ts($0.lastRead) }, deltas.map { ts($0.completedAt) },
            positions, deltas.map { $0.position.map { String($0.position.percent) } ?? "" },
            deltas.map { ts($0.position?.key.timestamp) }, deltas.map { $0.position.map { Int64($0.key.sequence) } ?? 0 },
            deltas.map { $0.position?.key.eventID ?? "" },
            deltas.map(\.latest.sessionID), deltas.map(\.latest.targetType.rawValue), deltas.map { $0.latest.knowledgeBaseID ?? "" },
            deltas.map { ts($0.latest.key.timestamp) }, deltas.map { Int64($0.latest.key.sequence) }, deltas.map(\.latest.key.eventID),
        ])
        return try rows.map { row in
            let position = try row.decode(PostgresJSON?.self, "last_position").map { try $0.decode(ReadingPosition.self) }
            return ReadingProgressChanged(
                userId: try row.decode(String.self, "user_id"), materialId: try row.decode(String.self, "material_id"),
                status: ReadingStatus(rawValue: try row.decode(String.self, "status")) ?? .inProgress,
                lastPosition: position, progressPercent: try row.decode(Double.self, "progress_percent"),
                totalActiveSeconds: Int(try row.decode(Int64.self, "total_active_seconds")),
                lastReadAt: try row.decode(Date.self, "last_read_at"), lastSessionId: try row.decode(String?.self, "last_session_id"))
        }
    }
}
