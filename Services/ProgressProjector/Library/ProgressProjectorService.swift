import Contracts
import Foundation
import HTTPRouting
import Kafka
import Lifecycle
import Postgres
import Projection
import ServiceRuntime
import Settings
import UserErasure

/// Settings of the progress projector beyond the common ones.
public struct ProgressConfiguration: Sendable {
    public var eventsTopic: String
    public var progressTopic: String
    public var groupID: String
    public var maxBatchRecords: Int
    public var maxBatchWait: Duration
    public var sessionTimeout: Duration
    /// How often the outbox relay looks for notifications left unpublished.
    public var outboxInterval: Duration

    public init(eventsTopic: String = Topics.readingEvents, progressTopic: String = Topics.readingProgress,
                groupID: String = "progress-projector", maxBatchRecords: Int = 4_000, maxBatchWait: Duration = .milliseconds(20),
                sessionTimeout: Duration = .seconds(10), outboxInterval: Duration = .seconds(5)) {
        self.eventsTopic = eventsTopic
        self.progressTopic = progressTopic
        self.groupID = groupID
        self.maxBatchRecords = maxBatchRecords
        self.maxBatchWait = maxBatchWait
        self.sessionTimeout = sessionTimeout
        self.outboxInterval = outboxInterval
    }

    /// `READING_EVENTS_TOPIC`, `READING_PROGRESS_TOPIC`, `PROGRESS_GROUP_ID`,
    /// `PROGRESS_BATCH_RECORDS`, `PROGRESS_BATCH_WAIT_MS`, `KAFKA_SESSION_TIMEOUT_MS`, `PROGRESS_OUTBOX_INTERVAL_MS`.
    public static func read(from env: inout EnvironmentReader) -> ProgressConfiguration {
        ProgressConfiguration(
            eventsTopic: env.string("READING_EVENTS_TOPIC", default: Topics.readingEvents),
            progressTopic: env.string("READING_PROGRESS_TOPIC", default: Topics.readingProgress),
            groupID: env.string("PROGRESS_GROUP_ID", default: "progress-projector"),
            maxBatchRecords: env.int("PROGRESS_BATCH_RECORDS", default: 4_000, range: 1...10_000),
            maxBatchWait: env.milliseconds("PROGRESS_BATCH_WAIT_MS", default: .milliseconds(20)),
            sessionTimeout: env.kafkaSessionTimeout(default: .seconds(10)),
            outboxInterval: env.loopInterval("PROGRESS_OUTBOX_INTERVAL_MS", default: .seconds(5)))
    }
}

/// progress-projector: consumes `reading.events.v2` into `reading_progress` and serves
/// `GET /materials/{id}/reading-progress` and `GET /learning/continue` for the token's user.
public struct ProgressProjectorService: Sendable {
    public static let migrations = ProjectionSchema.migrations + ProgressSchema.migrations

    let context: ServiceContext
    let configuration: ProgressConfiguration

    public init(context: ServiceContext, configuration: ProgressConfiguration = ProgressConfiguration()) {
        self.context = context
        self.configuration = configuration
    }

    public func parts() -> ServiceParts {
        let runner = makeRunner()
        let relay = OutboxRelay(name: "progress-notifications",
                                outbox: ProgressNotificationOutbox(projection: projection, database: context.database),
                                interval: configuration.outboxInterval, logger: context.logger)
        let erasure = UserErasure(service: ProgressErasure.service, context: context, step: .sql(ProgressErasure.statements)).parts()
        let loops: [any Service] = [
            ClosureService(name: "progress-projection") { try await runner.run() },
            ClosureService(name: "progress-outbox-relay") { try await relay.run() },
        ]
        return ServiceParts(router: router(), background: loops + erasure.background,
                            readiness: [ReadinessCheck(name: "progress-consumer") { !runner.isAssignmentStalled }] + erasure.readiness)
    }

    var projection: ReadingProgressProjection {
        ReadingProgressProjection(producer: context.producer, database: context.database, progressTopic: configuration.progressTopic)
    }

    public func makeRunner() -> ProjectionRunner<ReadingProgressProjection> {
        ProjectionRunner(
            projection: projection,
            configuration: ProjectionRunnerConfiguration(
                bootstrapServers: context.configuration.kafkaBrokers, groupID: configuration.groupID,
                topics: [configuration.eventsTopic], maxBatchRecords: configuration.maxBatchRecords,
                maxBatchWait: configuration.maxBatchWait, sessionTimeout: configuration.sessionTimeout), context: context)
    }

    public func router() -> Router {
        var router = Router()
        let database = context.database
        let auth = context.authenticator
        router.get("/materials/:id/reading-progress") { request in
            let user = try await auth.userID(request)
            let material = request.pathParameters["id"] ?? ""
            // An id ingest would reject is in no one's progress: the caller sent something else.
            guard Identifier.isValid(material) else {
                throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                                message: "id: a material id is \(Identifier.rule)")
            }
            let rows = try await database.queryPrepared(ProgressSQL.progress, [user, material])
            guard let row = rows.first else {
                return Self.json(ReadingProgressResponse.notStarted(material).json)
            }
            return Self.json(try Self.progress(row).json)
        }
        router.get("/learning/continue") { request in
            let user = try await auth.userID(request)
            guard let row = try await database.queryPrepared(ProgressSQL.continueLearning, [user]).first else {
                return Self.json(ContinueLearningResponse.none.json)
            }
            let response = ContinueLearningResponse(
                type: .material, materialId: try row.decode(String.self, "material_id"),
                readingTargetType: ReadingTargetType(rawValue: try row.decode(String.self, "reading_target_type")),
                knowledgeBaseId: try row.decode(String?.self, "knowledge_base_id"),
                lastPosition: try Self.position(row), progressPercent: try row.decode(Double.self, "progress_percent"),
                lastReadAt: try row.decode(Date.self, "last_read_at"))
            return Self.json(response.json)
        }
        return router
    }

    /// A 200 with a body the response type wrote itself (what `ContractCoding.encoder` would write).
    static func json(_ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: body)
    }

    static func position(_ row: PostgresRow) throws -> ReadingPosition? {
        try ProgressNotification.lastPosition(row)
    }

    static func progress(_ row: PostgresRow) throws -> ReadingProgressResponse {
        ReadingProgressResponse(
            materialId: try row.decode(String.self, "material_id"),
            status: ReadingStatus(rawValue: try row.decode(String.self, "status")) ?? .inProgress,
            lastPosition: try position(row), progressPercent: try row.decode(Double.self, "progress_percent"),
            totalActiveSeconds: Int(try row.decode(Int64.self, "total_active_seconds")),
            firstReadAt: try row.decode(Date?.self, "first_read_at"), lastReadAt: try row.decode(Date?.self, "last_read_at"),
            completedAt: try row.decode(Date?.self, "completed_at"), lastSessionId: try row.decode(String?.self, "last_session_id"),
            readingTargetType: ReadingTargetType(rawValue: try row.decode(String.self, "reading_target_type")),
            knowledgeBaseId: try row.decode(String?.self, "knowledge_base_id"))
    }
}
