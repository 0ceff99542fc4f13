import Foundation
import Lifecycle
import Postgres
import Projection
import ServiceLogging

/// The `reading.progress.v1` notifications whose after-commit publish never completed (a
/// crash between commit and publish, a broker outage), for the shared ``OutboxRelay``: each
/// is sent with its row's current state and then dequeued. A notification is the row's whole
/// state, so one sent twice (the relay and a late after-commit) is harmless.
public struct ProgressNotificationOutbox: Outbox {
    let projection: ReadingProgressProjection
    let database: PostgresClient

    public init(projection: ReadingProgressProjection, database: PostgresClient) {
        self.projection = projection
        self.database = database
    }

    public func publishPending(olderThan grace: Duration, limit: Int) async throws -> Int {
        let seconds = grace.timeInterval
        let pending = try await database.query(ProgressSQL.pendingNotifications, [seconds, limit]).map(ProgressNotification.init(row:))
        try await projection.afterCommit(pending)
        return pending.count
    }
}
