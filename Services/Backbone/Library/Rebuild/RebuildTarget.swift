import AnalyticsAggregator
import Contracts
import Foundation
import Kafka
import Postgres
import ProgressProjector
import Projection
import ServiceLogging
import ServiceRuntime
import Settings
import TranscodeWorker

/// A read model `backbone rebuild` can re-project: the service's own migrations (run in the
/// shadow schema), its own projection (run with the shadow schema as the search path), the
/// topics it is fed by and the consumer group whose positions on them the swap meets, and
/// which relations move at the swap.
struct RebuildTarget: Sendable {
    let name: String
    /// The service that owns the tables and runs the live consumer.
    let service: String
    /// Every topic the live consumer reads (one for most models; the catalog reads several).
    let topics: [String]
    let groupID: String
    let migrations: [PostgresMigration]
    /// Tables swapped into place, in the order the live projection writes them (the swap
    /// locks them in this order, so it never deadlocks with a live batch).
    let tables: [String]
    /// Views over `tables`, swapped with them.
    let views: [String]
    /// Relations the projection writes that stay live (created in the shadow only so that
    /// the projection's statements find them there, and dropped with it): the progress
    /// notification outbox — a rebuild announces nothing.
    let scratch: [String]
    /// The service's projection over the shadow (made once the rebuild needs it).
    let makeApplier: @Sendable (_ brokers: String, _ databaseURL: String) throws -> any ShadowApplier
    /// Topics of `topics` another of the service's consumer groups reads for these tables (topic
    /// → group): the catalog's forks come from the social group's remixes. The rebuild chases and
    /// hands over that group's positions on them.
    var otherGroups: [String: String] = [:]
    /// The advisory lock every live batch of the service takes first, shared (its erasure fence):
    /// the swap takes it exclusively before anything else, so no live batch of any group that
    /// writes these tables is half-way (holding some of them) when it locks them all.
    var fence: Int64? = nil
    /// State no topic holds, copied from the live tables into the shadow in the swap's (or the
    /// dry run's) transaction, the live tables locked: `(shadow schema, live schema)` → statements.
    var carried: @Sendable (_ shadow: String, _ live: String) -> [String] = { _, _ in [] }

    static let names = ["progress", "analytics", "catalog", "learning", "social"]

    /// The consumer group whose positions on `topic` the rebuild meets.
    func group(of topic: String) -> String { otherGroups[topic] ?? groupID }

    /// The target called `name`, configured from the environment exactly as its service is.
    static func named(_ name: String, environment: [String: String]) throws -> RebuildTarget? {
        var env = EnvironmentReader(environment)
        switch name {
        case "progress":
            let configuration = ProgressConfiguration.read(from: &env)
            try env.validate()
            return RebuildTarget(
                name: name, service: "progress-projector", topics: [configuration.eventsTopic], groupID: configuration.groupID,
                migrations: ProgressSchema.migrations, tables: ["progress_event_log", "reading_progress"], views: [],
                scratch: ["progress_notify_outbox", "progress_notify_version"]) { brokers, url in
                    // The producer and pool are what the projection's after-commit publish uses;
                    // a rebuild never runs it (it announces nothing), so neither ever connects.
                    let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: brokers), logger: .disabled)
                    let database = PostgresClient(configuration: PostgresConfiguration(url: url, maxConnections: 1), logger: .disabled)
                    return ProjectionApplier(projection: ReadingProgressProjection(producer: producer, database: database,
                                                                                   progressTopic: configuration.progressTopic))
                }
        case "analytics":
            let configuration = AnalyticsConfiguration.read(from: &env)
            try env.validate()
            return RebuildTarget(
                name: name, service: "analytics-aggregator", topics: [configuration.topic], groupID: configuration.groupID,
                migrations: AnalyticsSchema.readingMigrations,
                tables: ["analytics_events", "analytics_daily", "analytics_months", "analytics_day_materials", "analytics_day_sessions",
                         "analytics_completions", "analytics_sessions", "analytics_users", "analytics_streak_runs",
                         "analytics_streak_settings"],
                views: ["analytics_daily_figures"], scratch: []) { _, _ in
                    ProjectionApplier(projection: AnalyticsProjection(streakThresholdSeconds: configuration.streakThresholdSeconds))
                }
        case "learning":
            // The learning app's read model: the analytics aggregator's second consumer group. Its
            // push outbox stays live (a rebuild announces nothing).
            let configuration = AnalyticsConfiguration.read(from: &env)
            try env.validate()
            return RebuildTarget(
                name: name, service: "analytics-aggregator", topics: [configuration.learningTopic], groupID: configuration.learningGroupID,
                migrations: LearningSchema.migrations,
                tables: ["learning_knowledge_bases", "learning_paths", "learning_lessons", "learning_profiles", "learning_review_tasks",
                         "learning_sessions", "learning_feedback"],
                views: [], scratch: ["learning_outbox"]) { _, _ in
                    ProjectionApplier(projection: LearningProjection(outbox: nil))
                }
        case "catalog":
            // The catalog's topics, and the remixes: a fork's room and first version are written by
            // the social projection (group room-social), from room.interactions.v1.
            let configuration = TranscodeConfiguration.read(from: &env)
            try env.validate()
            let catalog = configuration.catalog
            return RebuildTarget(
                name: name, service: "transcode-worker", topics: configuration.catalogTopics + [configuration.interactionsTopic],
                groupID: catalog.groupID,
                migrations: CatalogSchema.migrations, tables: ["catalog_versions", "catalog_rooms"], views: [], scratch: [],
                makeApplier: { _, _ in
                    ProjectionApplier(projection: CatalogWithForksProjection(
                        catalog: CatalogProjection(requestsTopic: configuration.requestsTopic, uploadsTopic: configuration.uploadsTopic,
                                                   feedHalfLife: catalog.feedHalfLife),
                        interactionsTopic: configuration.interactionsTopic))
                },
                otherGroups: [configuration.interactionsTopic: configuration.socialGroupID],
                fence: AdvisoryLockKey.named("user-erasure:" + TranscodeErasure.service))
        case "social":
            // CrowdRoom's social read models (the catalog's second consumer group). The forks'
            // catalog rows are `catalog`'s (written here into scratch copies and dropped); the
            // recipients' read marks are no topic's and are carried over.
            let configuration = TranscodeConfiguration.read(from: &env)
            try env.validate()
            let catalog = configuration.catalog
            return RebuildTarget(
                name: name, service: "transcode-worker", topics: configuration.socialTopics, groupID: configuration.socialGroupID,
                migrations: CatalogSchema.migrations + SocialSchema.migrations,
                tables: ["catalog_comments", "catalog_notifications", "catalog_likes", "catalog_profiles", "catalog_room_social"],
                views: [], scratch: ["catalog_versions", "catalog_rooms"],
                makeApplier: { _, _ in
                    ProjectionApplier(projection: SocialProjection(
                        interactionsTopic: configuration.interactionsTopic,
                        catalog: CatalogProjection(requestsTopic: configuration.requestsTopic, uploadsTopic: configuration.uploadsTopic,
                                                   feedHalfLife: catalog.feedHalfLife)))
                },
                fence: AdvisoryLockKey.named("user-erasure:" + TranscodeErasure.service),
                carried: { shadow, live in [
                    """
                    UPDATE \(shadow).catalog_notifications s SET read_at = l.read_at FROM \(live).catalog_notifications l
                    WHERE l.notification_id = s.notification_id AND l.read_at IS DISTINCT FROM s.read_at
                    """,
                ] })
        default:
            return nil
        }
    }

    /// The topics as a sentence names them.
    var topicList: String { topics.joined(separator: ", ") }

    /// The shadow schema: the rebuilt tables under their own names until the swap.
    var shadowSchema: String { "rebuild_\(name)" }
    /// Where the live tables go for the moment of the swap (then dropped, same transaction).
    var retiredSchema: String { "rebuild_\(name)_retired" }
}

/// A service's projection, applied to the shadow: records it cannot decode are skipped (the
/// live consumer sent them to the dead-letter topic), as are records whose apply keeps
/// failing on its own.
protocol ShadowApplier: Sendable {
    /// Decodes the records (offset order within each partition); pure, so it runs while the
    /// previous batch is applied.
    func decode(_ records: [KafkaConsumerRecord]) -> DecodedBatch
}

/// A decoded batch, ready to be applied in an open transaction.
struct DecodedBatch: Sendable {
    /// Records left out because they cannot be decoded.
    let undecodable: Int
    /// Applies the batch on the connection (in its open transaction); returns how many more
    /// records were left out because their apply failed on its own.
    let apply: @Sendable (PostgresConnection) async throws -> Int

    static let empty = DecodedBatch(undecodable: 0) { _ in 0 }
}

struct ProjectionApplier<P: Projection>: ShadowApplier {
    let projection: P

    func decode(_ records: [KafkaConsumerRecord]) -> DecodedBatch {
        var events: [ProjectedEvent<P.Event>] = []
        events.reserveCapacity(records.count)
        var undecodable = 0
        for record in records {
            do {
                events.append(ProjectedEvent(event: try projection.decode(record), topic: record.topic,
                                             partition: record.partition, offset: record.offset))
            } catch {
                undecodable += 1
            }
        }
        let decoded = events
        return DecodedBatch(undecodable: undecodable) { connection in try await apply(decoded, in: connection) }
    }

    func apply(_ events: [ProjectedEvent<P.Event>], in connection: PostgresConnection) async throws -> Int {
        guard !events.isEmpty else { return 0 }
        do {
            _ = try await connection.withSavepoint { connection in try await projection.apply(events, in: connection) }
            return 0
        } catch let error as PostgresError where !error.isRetriable {
            // As the live runner does: a batch that fails for a reason of its own is applied
            // record by record, and a record that fails alone is left out.
            guard events.count > 1 else { return 1 }
            var failed = 0
            for event in events {
                do {
                    _ = try await connection.withSavepoint { connection in try await projection.apply([event], in: connection) }
                } catch let error as PostgresError where !error.isRetriable {
                    failed += 1
                }
            }
            return failed
        }
    }
}
