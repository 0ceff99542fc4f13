import Contracts
import Foundation
import Logging
import Postgres

/// The outbox and janitor loop: re-publishes history rows whose after-commit publish never
/// completed (a broker outage, a crash between commit and publish), and trims rows past the
/// age bound on channels that stopped receiving events.
struct RealtimeMaintenance: Sendable {
    let database: PostgresClient
    let publisher: SequencedPublisher
    let configuration: RealtimeConfiguration
    let logger: Logger

    func run() async throws {
        while !Task.isCancelled {
            do {
                try await republish()
                try await trimExpired()
            } catch is CancellationError {
                return
            } catch {
                logger.warning("realtime maintenance failed; will retry", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: configuration.maintenanceInterval)
        }
    }

    /// Publishes unpublished rows older than the grace period, oldest first.
    func republish(grace: Duration = .seconds(2)) async throws {
        while !Task.isCancelled {
            let rows = try await database.query(RealtimeSQL.unpublished, [Double(grace.components.seconds)])
            guard !rows.isEmpty else { return }
            let events = try rows.map(ChannelHistory.event)
            logger.notice("re-publishing sequenced events", metadata: ["realtime.count": "\(events.count)"])
            try await publisher.publish(events)
            if rows.count < 1_000 { return }
        }
    }

    func trimExpired() async throws {
        let seconds = Double(configuration.historyMaxAge.components.seconds)
        let channels = try await database.query(RealtimeSQL.expiredChannels, [seconds]).map { try $0.decode(String.self, "channel") }
        guard !channels.isEmpty else { return }
        _ = try await database.execute(RealtimeSQL.trim, [channels, Int64(configuration.historyMaxEvents), seconds])
    }
}
