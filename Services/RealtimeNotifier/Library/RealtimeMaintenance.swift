import Contracts
import Foundation
import Lifecycle
import Postgres
import Projection
import ServiceLogging
import ServiceRuntime

/// The outbox and janitor loop: re-publishes history rows whose after-commit publish never
/// completed (a broker outage, a crash between commit and publish), trims rows past the age
/// bound on channels that stopped receiving events, and probes local subscriptions against
/// the channels' last sequences.
struct RealtimeMaintenance: Sendable {
    let database: PostgresClient
    let publisher: SequencedPublisher
    let hub: SubscriptionHub
    let configuration: RealtimeConfiguration
    let logger: Logger

    func run() async throws {
        try await PeriodicTask(name: "realtime-maintenance", every: configuration.maintenanceInterval,
                               failure: "realtime maintenance failed; will retry", logger: logger) {
            // Each step on its own: a broker outage must not stop the probe, nor the trim.
            await step("re-publish") { try await republish() }
            await step("trim") { try await trimExpired() }
            await step("probe") { try await probe() }
        }.run()
    }

    private func step(_ name: String, _ body: () async throws -> Void) async {
        do {
            try await body()
        } catch is CancellationError {
        } catch {
            logger.warning("realtime maintenance step failed; will retry", metadata: ["realtime.step": name, "error": "\(error)"])
        }
    }

    /// Publishes unpublished rows older than the grace period, oldest first.
    func republish(grace: Duration = .seconds(2)) async throws {
        try await OutboxRelay(name: "realtime-history", outbox: SequencedHistoryOutbox(database: database, publisher: publisher),
                              interval: configuration.maintenanceInterval, grace: grace, logger: logger).relayPending()
    }

    /// Compares local subscriptions with the channels' last sequences (see `SubscriptionHub.probe`).
    func probe() async throws {
        let channels = hub.subscribedChannels
        guard !channels.isEmpty else { return }
        var latest: [String: Int64] = [:]
        for row in try await database.query(RealtimeSQL.lastSeqs, [channels]) {
            latest[try row.decode(String.self, "channel")] = try row.decode(Int64.self, "last_seq")
        }
        hub.probe(latest: latest)
    }

    func trimExpired() async throws {
        let seconds = configuration.historyMaxAge.timeInterval
        let channels = try await database.query(RealtimeSQL.expiredChannels, [seconds]).map { try $0.decode(String.self, "channel") }
        guard !channels.isEmpty else { return }
        _ = try await database.execute(RealtimeSQL.trimByAge, [channels, seconds])
    }
}

/// The history rows not yet marked published: the notifier's outbox.
struct SequencedHistoryOutbox: Outbox {
    let database: PostgresClient
    let publisher: SequencedPublisher

    func publishPending(olderThan grace: Duration, limit: Int) async throws -> Int {
        let events = try await database.query(RealtimeSQL.unpublished, [grace.timeInterval, Int64(limit)])
            .map(ChannelHistory.event)
        try await publisher.publish(events)
        // The marks are written off the publish path; the next round must not see these rows again.
        await publisher.flushMarks()
        return events.count
    }
}
