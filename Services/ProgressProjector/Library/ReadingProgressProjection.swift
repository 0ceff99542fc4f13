import Auth
import Contracts
import Foundation
import Kafka
import Postgres
import Projection
import ServiceLogging
import UserErasure

/// The reading-progress read model: per (user, material) status, latest position, percent,
/// active seconds and read times, from the reading-event stream.
///
/// Every rule is order-independent, so late, duplicated and interleaved events give the
/// state of the in-order stream: the position is the one of the latest event by
/// (clientTimestamp, sequence, eventId); `markedAsRead` completes for good; active seconds
/// sum over distinct events (the event log's unique `event_id` drops repeats).
///
/// Every change is also queued in `progress_notify_outbox` by the same transaction, and
/// dequeued once its `reading.progress.v1` record was acknowledged; the shared `OutboxRelay` over
/// `ProgressNotificationOutbox` publishes what a crash or a broker outage left behind.
public struct ReadingProgressProjection: Projection {
    public typealias Event = ReadingEventRecord
    public typealias Effects = [ProgressNotification]

    let producer: any KafkaRecordSender
    let database: PostgresClient
    let progressTopic: String
    /// Users whose account was erased: their events are left out (a replay or a rebuild
    /// brings nobody back).
    let erasedUsers = ErasedUsers(service: ProgressErasure.service)

    public init(producer: any KafkaRecordSender, database: PostgresClient, progressTopic: String = Topics.readingProgress) {
        self.producer = producer
        self.database = database
        self.progressTopic = progressTopic
    }

    /// The record, if it keeps the reading event's one rule (`ReadingEventRecord.validate()`,
    /// the rule ingest and the analytics aggregator apply too); the runner dead-letters it otherwise.
    public func decode(_ record: KafkaConsumerRecord) throws -> ReadingEventRecord {
        let event = try ReadingEventRecord(json: record.value)
        try event.validate()
        return event
    }

    public func apply(_ events: [ProjectedEvent<ReadingEventRecord>], in connection: PostgresConnection) async throws -> [ProgressNotification] {
        guard !events.isEmpty else { return [] }
        let erased = try await erasedUsers.erased(among: Set(events.lazy.map(\.event.userId)), in: connection)
        let events = erased.isEmpty ? events : events.filter { !erased.contains($0.event.userId) }
        guard !events.isEmpty else { return [] }
        let fresh = try await insertIntoLog(events, connection)
        guard !fresh.isEmpty else { return [] }
        // A change goes on with the trace of the (last traced) event of its row that made it,
        // kept in the outbox with it for the relay's re-send.
        var traces: [String: String] = [:]
        for item in events {
            if let trace = item.trace { traces[item.event.userId + "\u{0}" + item.event.materialId] = trace.traceparent }
        }
        return try await upsertProgress(ProgressDelta.fold(fresh), traces: traces, connection)
    }

    /// The changes of batches committed while a publish was waiting for its acknowledgements
    /// go out together, in commit order.
    public func combine(_ effects: [[ProgressNotification]]) -> [[ProgressNotification]] {
        effects.count > 1 ? [effects.flatMap { $0 }] : effects
    }

    /// Publishes the changes, then takes them out of the outbox (a newer change of the same
    /// row stays queued). A failed publish leaves them queued for the relay.
    public func afterCommit(_ effects: [ProgressNotification]) async throws {
        guard !effects.isEmpty else { return }
        let records = try effects.map {
            KafkaProducerRecord(topic: progressTopic, key: Array($0.change.userId.utf8), value: try ContractCoding.encode($0.change),
                                headers: $0.trace.map { [.trace($0)] } ?? [])
        }
        for result in await producer.send(records) { _ = try result.get() }
        _ = try await database.execute(ProgressSQL.dequeue, [effects.map(\.change.userId), effects.map(\.change.materialId),
                                                             effects.map(\.version)])
    }

    /// Inserts the batch into the event log; returns the events not seen before (first
    /// occurrence of each id).
    ///
    /// See ``EventLog`` for how the usual batch and a replayed one are logged.
    func insertIntoLog(_ events: [ProjectedEvent<ReadingEventRecord>], _ connection: PostgresConnection) async throws -> [ReadingEventRecord] {
        var seen = Set<String>(minimumCapacity: events.count)
        let distinct = events.filter { seen.insert($0.event.eventId).inserted }
        var rows = PostgresCopyRows(reservingBytes: distinct.count * 160)
        for p in distinct { Self.appendLogRow(p, to: &rows) }
        let known = try await ProgressSQL.eventLog.insert(rows, in: connection)
        if known.isEmpty { return distinct.map(\.event) }
        return distinct.lazy.map(\.event).filter { !known.contains($0.eventId) }
    }

    /// One event log row, in `ProgressSQL.eventLog.columns` order.
    static func appendLogRow(_ p: ProjectedEvent<ReadingEventRecord>, to rows: inout PostgresCopyRows) {
        let e = p.event
        rows.append(e.eventId); rows.append(e.userId); rows.append(e.materialId); rows.append(e.clientSessionId)
        rows.append(e.eventType.rawValue); rows.append(e.clientTimestamp); rows.append(e.sequence)
        rows.append(e.activeSecondsDelta); rows.append(p.partition); rows.append(p.offset)
        rows.endRow()
    }

    /// `traces`: the `traceparent` of each row's change, by user and material (NUL-separated).
    func upsertProgress(_ deltas: [ProgressDelta], traces: [String: String] = [:],
                        _ connection: PostgresConnection) async throws -> [ProgressNotification] {
        func ts(_ d: Date?) -> String { d.flatMap(\.postgresText) ?? "" }
        let positions = try deltas.map { d -> String in
            guard let p = d.position?.position else { return "" }
            return String(decoding: try ContractCoding.encode(p), as: UTF8.self)
        }
        let rows = try await connection.query(ProgressSQL.upsert, [
            deltas.map(\.userID), deltas.map(\.materialID), deltas.map { Int64($0.activeSeconds) },
            deltas.map { ts($0.firstRead) }, deltas.map { ts($0.lastRead) }, deltas.map { ts($0.completedAt) },
            positions, deltas.map { $0.position?.position.percent.map { String($0) } ?? "" },
            deltas.map { ts($0.position?.key.timestamp) }, deltas.map { $0.position.map { Int64($0.key.sequence) } ?? 0 },
            deltas.map { $0.position?.key.eventID ?? "" },
            deltas.map(\.latest.sessionID), deltas.map(\.latest.targetType.rawValue), deltas.map { $0.latest.knowledgeBaseID ?? "" },
            deltas.map { ts($0.latest.key.timestamp) }, deltas.map { Int64($0.latest.key.sequence) }, deltas.map(\.latest.key.eventID),
            deltas.map { traces[$0.userID + "\u{0}" + $0.materialID] ?? "" },
        ])
        var deltaIndex: [String: Int] = [:]
        for (index, d) in deltas.enumerated() { deltaIndex[d.userID + "\u{0}" + d.materialID] = index }
        return try rows.map { row in
            // The stored position is this batch's own when it comes from the same event;
            // only an older batch's position is read back from its JSON.
            try ProgressNotification(row: row) { userID, materialID, positionEventID in
                guard let index = deltaIndex[userID + "\u{0}" + materialID], let own = deltas[index].position,
                      positionEventID == own.key.eventID else { return nil }
                return own.position
            }
        }
    }
}

/// A change to announce on `reading.progress.v1`, with its version in the outbox.
public struct ProgressNotification: Sendable {
    public var change: ReadingProgressChanged
    public var version: Int64
    /// The trace of the event that made the change, kept in the outbox (so also when the relay
    /// re-sends it).
    public var trace: TraceContext?

    /// The row's `last_position` (jsonb), read with the contract's yajl reader.
    static func lastPosition(_ row: PostgresRow) throws -> ReadingPosition? {
        try row.text("last_position").map { try ReadingPosition(json: Array($0.utf8)) }
    }

    /// From a row with the `reading_progress` columns of the notification, `version` and
    /// `traceparent`.
    public init(row: PostgresRow) throws { try self.init(row: row, ownPosition: nil) }

    /// `ownPosition(user, material, position_event_id)` may supply the position without
    /// reading the row's JSON.
    init(row: PostgresRow, ownPosition: ((String, String, String?) -> ReadingPosition?)?) throws {
        let userID = try row.decode(String.self, "user_id"), materialID = try row.decode(String.self, "material_id")
        let position: ReadingPosition?
        if let ownPosition, let own = ownPosition(userID, materialID, try row.decode(String?.self, "position_event_id")) {
            position = own
        } else {
            position = try Self.lastPosition(row)
        }
        change = ReadingProgressChanged(
            userId: userID, materialId: materialID,
            status: ReadingStatus(rawValue: try row.decode(String.self, "status")) ?? .inProgress,
            lastPosition: position, progressPercent: try row.decode(Double.self, "progress_percent"),
            totalActiveSeconds: Int(try row.decode(Int64.self, "total_active_seconds")),
            lastReadAt: try row.decode(Date.self, "last_read_at"), lastSessionId: try row.decode(String?.self, "last_session_id"))
        version = try row.decode(Int64.self, "version")
        trace = try row.decode(String?.self, "traceparent").flatMap(TraceContext.init(traceparent:))
    }
}
