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

    /// UTC−12:00 … UTC+14:00, the offsets in use on Earth (the reading event's rule).
    public static let offsetRange = ReadingEventUploadItem.timezoneOffsetRange

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

    /// The reading event's one rule (`ReadingEventRecord.validate()`, the rule ingest and the
    /// progress projector apply too), in the aggregator's dead-letter terms.
    static func validate(_ event: ReadingEventRecord) throws(AnalyticsRecordError) {
        do {
            try event.validate()
        } catch {
            throw AnalyticsRecordError(code: error.field == "schemaVersion" ? .unsupportedSchema : .invalidField,
                                       message: error.message, context: ["field": error.field])
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
