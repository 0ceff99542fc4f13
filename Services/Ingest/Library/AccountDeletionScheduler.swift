import Auth
import Contracts
import Foundation
import Kafka
import Lifecycle
import Postgres
import Projection
import ServiceLogging
import ServiceRuntime

/// `account_deletion_outbox` for the shared `OutboxRelay`: the `user.deletions.v1` records
/// (key: the user id) of requests whose purge started, deleted once the broker acknowledged
/// them (a ``KeyedRecordOutbox``, one publisher at a time across the ingest instances; a
/// record sent twice is harmless, every service's erasure being a no-op the second time).
struct AccountDeletionOutbox: Outbox {
    let outbox: KeyedRecordOutbox

    init(database: PostgresClient, producer: any KafkaRecordSender, topic: String) {
        outbox = KeyedRecordOutbox(database: database, producer: producer, table: "account_deletion_outbox", keyColumn: "user_id",
                                   topic: topic, lockKey: AdvisoryLockKey.named("account-deletion-outbox"))
    }

    func publishPending(olderThan grace: Duration, limit: Int) async throws -> Int {
        try await outbox.publishPending(olderThan: grace, limit: limit)
    }
}

/// The periodic side of account deletion, in the pattern of the upload sweep: every
/// `interval`, requests past their `purgeAt` start (`AccountDeletionStore.startDue`) and their
/// records go out through the relay; every second the set of users whose uploads are refused
/// is re-read, so every instance refuses them.
struct AccountDeletionScheduler: Sendable {
    let store: AccountDeletionStore
    let relay: OutboxRelay<AccountDeletionOutbox>
    let pending: RevokedSubjects
    let services: [String]
    let interval: Duration
    let logger: Logger

    /// One pass: starts what is due and publishes; returns how many requests started.
    @discardableResult
    func runOnce(now: Date = Date()) async throws -> Int {
        let started = try await store.startDue(now: now, services: services)
        if started > 0 { logger.notice("account deletions started", metadata: ["account.deletions": "\(started)"]) }
        try await relay.relayPending()
        return started
    }

    func loops() -> [any Service] {
        [
            PeriodicTask(name: "ingest-account-deletions", every: interval, failure: "account deletion scheduler failed; will retry",
                         logger: logger) { try await runOnce() },
            PeriodicTask(name: "ingest-pending-deletions", every: .seconds(1), failure: "reading pending account deletions failed",
                         logger: logger) {
                let changes = pending.changes
                pending.replace(hashes: try await store.openHashes(), unlessChangedSince: changes)
            },
        ]
    }
}
