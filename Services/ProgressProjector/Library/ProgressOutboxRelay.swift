import Foundation
import Logging
import Postgres

/// Publishes the `reading.progress.v1` notifications whose after-commit publish never
/// completed (a crash between commit and publish, a broker outage): every outbox entry older
/// than `grace` is sent with its row's current state and then dequeued. A notification is the
/// row's whole state, so one sent twice (the relay and a late after-commit) is harmless.
public struct ProgressOutboxRelay: Sendable {
    let projection: ReadingProgressProjection
    let database: PostgresClient
    let interval: Duration
    let grace: Duration
    let logger: Logger

    public init(projection: ReadingProgressProjection, database: PostgresClient, interval: Duration,
                grace: Duration = .seconds(2), logger: Logger) {
        self.projection = projection
        self.database = database
        self.interval = interval
        self.grace = grace
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isCancelled {
            do {
                try await relayPending()
            } catch is CancellationError {
                return
            } catch {
                logger.warning("progress notification relay failed; will retry", metadata: ["error": "\(error)"])
            }
            do { try await Task.sleep(for: interval) } catch { return }
        }
    }

    /// Sends and dequeues everything pending past the grace period, oldest first.
    public func relayPending(limit: Int = 1_000) async throws {
        let seconds = Double(grace.components.seconds) + Double(grace.components.attoseconds) / 1e18
        while !Task.isCancelled {
            let pending = try await database.query(ProgressSQL.pendingNotifications, [seconds, limit]).map(ProgressNotification.init(row:))
            guard !pending.isEmpty else { return }
            logger.notice("re-publishing progress notifications", metadata: ["progress.count": "\(pending.count)"])
            try await projection.afterCommit(pending)
            if pending.count < limit { return }
        }
    }
}
