import Auth
import Foundation
import Kafka
import Lifecycle
import Postgres
import Projection
import ServiceLogging
import ServiceRuntime
import Synchronization

/// A service's part in account deletion, configured with what it erases: consumes
/// `user.deletions.v1` in the service's own consumer group (`<service>-erasure`) with a
/// `UserErasureProjection`, relays the confirmations it queued (`OutboxRelay` over
/// `UserErasureOutbox`), and keeps the service's token check (`RevokedSubjects`) in step
/// with `erased_users`, so the tokens of a user any instance erased get 401 on every instance
/// within `refreshInterval`.
public struct UserErasure: Sendable {
    public let erasedUsers: ErasedUsers
    let context: ServiceContext
    let step: UserErasureStep
    let groupID: String
    let outboxInterval: Duration
    let refreshInterval: Duration

    public init(service: String, context: ServiceContext, groupID: String? = nil, outboxInterval: Duration = .seconds(5),
                refreshInterval: Duration = .seconds(2), step: UserErasureStep) {
        self.erasedUsers = ErasedUsers(service: service)
        self.context = context
        self.step = step
        self.groupID = groupID ?? "\(service)-erasure"
        self.outboxInterval = outboxInterval
        self.refreshInterval = refreshInterval
    }

    var outbox: UserErasureOutbox {
        UserErasureOutbox(service: erasedUsers.service, database: context.database, producer: context.producer,
                          topic: context.configuration.userDeletionStatusTopic)
    }

    public func makeRunner() -> ProjectionRunner<UserErasureProjection> {
        ProjectionRunner(
            projection: UserErasureProjection(erasedUsers: erasedUsers, step: step, outbox: outbox,
                                              revoked: context.authenticator.codec.revoked),
            configuration: ProjectionRunnerConfiguration(
                bootstrapServers: context.configuration.kafkaBrokers, groupID: groupID,
                topics: [context.configuration.userDeletionsTopic], maxBatchRecords: 50), context: context)
    }

    /// The consumer, the confirmation relay and the token-check refresh, and the consumer's
    /// readiness (not ready while it holds no partition of records no member processes).
    public func parts() -> (background: [any Service], readiness: [ReadinessCheck]) {
        let runner = makeRunner()
        let relay = OutboxRelay(name: "\(erasedUsers.service)-erasure-confirmations", outbox: outbox, interval: outboxInterval,
                                logger: context.logger)
        let erasedUsers = self.erasedUsers
        let revoked = context.authenticator.codec.revoked
        let database = context.database
        let interval = refreshInterval
        let logger = context.logger
        let readiness = ReadinessCheck(name: "\(erasedUsers.service)-erasure-consumer") { !runner.isAssignmentStalled }
        return ([
            ClosureService(name: "\(erasedUsers.service)-erasure") { try await runner.run() },
            ClosureService(name: "\(erasedUsers.service)-erasure-relay") { try await relay.run() },
            PeriodicTask(name: "\(erasedUsers.service)-erased-tokens", every: interval,
                         failure: "reading erased users failed; will retry", logger: logger) { [since = Mutex<Date?>(nil)] in
                let (hashes, latest) = try await erasedUsers.listed(since: since.withLock { $0 }, client: database)
                if !hashes.isEmpty { revoked.insert(hashes: hashes) }
                // Rows committed late with an earlier time are caught by re-reading a margin.
                since.withLock { $0 = latest.map { $0.addingTimeInterval(-60) } }
            },
        ], [readiness])
    }
}
