import Auth
import Contracts
import Foundation
import Kafka
import Postgres
import Projection
import UserErasure

/// The analytics read model as a `Projection`: records are logged by `eventId`, and only
/// the events inserted for the first time are folded into the aggregates, in the runner's
/// transaction (so a replay after a crash, or a duplicate, changes nothing).
public struct AnalyticsProjection: Projection {
    public typealias Event = ReadingEventRecord
    public typealias Effects = Void

    /// UTC−12:00 … UTC+14:00, the offsets in use on Earth.
    public static let offsetRange = -720...840

    /// Users whose account was erased: their events are left out (a replay or a rebuild
    /// brings nobody back).
    let erasedUsers = ErasedUsers(service: AnalyticsErasure.service)

    /// The streak runs the summary reads, kept for the configured threshold.
    public let streaks: StreakRuns

    public init(streakThresholdSeconds: Int = AnalyticsConfiguration().streakThresholdSeconds) {
        self.streaks = StreakRuns(thresholdSeconds: streakThresholdSeconds)
    }

    /// The error names what is wrong, not where: the dead letter carries its origin, and
    /// `backbone dlq list` groups dead letters by their error.
    public func decode(_ record: KafkaConsumerRecord) throws -> ReadingEventRecord {
        let event: ReadingEventRecord
        do {
            event = try ReadingEventRecord(json: record.value)
        } catch {
            throw AnalyticsRecordError(code: .undecodable, message: "not a reading event record: \(error)")
        }
        try Self.validate(event)
        return event
    }

    static func validate(_ event: ReadingEventRecord) throws(AnalyticsRecordError) {
        func invalid(_ field: String, _ message: String) -> AnalyticsRecordError {
            AnalyticsRecordError(code: .invalidField, message: message, context: ["field": field])
        }
        guard event.schemaVersion >= 1, event.schemaVersion <= ReadingEventRecord.currentSchemaVersion else {
            throw AnalyticsRecordError(code: .unsupportedSchema, message: "schema version \(event.schemaVersion)")
        }
        if event.userId.isEmpty { throw invalid("userId", "empty user id") }
        if !Identifier.isAcceptable(event.userId) {
            throw invalid("userId", "user id over \(Identifier.maxUTF8Length) bytes or with whitespace or control characters")
        }
        if event.eventId.isEmpty { throw invalid("eventId", "empty event id") }
        if event.clientSessionId.isEmpty { throw invalid("clientSessionId", "empty session id") }
        if event.materialId.isEmpty { throw invalid("materialId", "empty material id") }
        guard offsetRange.contains(event.clientTimezoneOffsetMinutes) else {
            throw invalid("clientTimezoneOffsetMinutes", "offset \(event.clientTimezoneOffsetMinutes) outside −720…840")
        }
        guard (0...86_400).contains(event.activeSecondsDelta) else {
            throw invalid("activeSecondsDelta", "delta \(event.activeSecondsDelta) outside 0…86400")
        }
    }

    public func apply(_ events: [ProjectedEvent<ReadingEventRecord>], in connection: PostgresConnection) async throws {
        // One row per event id (the first occurrence): the log's key admits each event once.
        let erased = try await erasedUsers.erased(among: Set(events.lazy.map(\.event.userId)), in: connection)
        var seen = Set<String>(minimumCapacity: events.count)
        let unique = events.map(\.event).filter { !erased.contains($0.userId) && seen.insert($0.eventId).inserted }
        guard !unique.isEmpty else { return }
        let fresh = try await AnalyticsWriter.logEvents(unique, in: connection)
        guard !fresh.isEmpty else { return }
        try await streaks.align(in: connection)
        try await AnalyticsWriter.apply(AnalyticsBatch(fresh), streakThresholdSeconds: streaks.thresholdSeconds, in: connection)
    }
}
