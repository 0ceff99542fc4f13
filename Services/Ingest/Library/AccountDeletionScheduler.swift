import Auth
import Contracts
import Foundation
import Kafka
import Logging
import Postgres
import Projection
import ServiceRuntime

/// `account_deletion_outbox` for the shared `OutboxRelay`: the `user.deletions.v1` records
/// (key: the user id) of requests whose purge started, deleted once the broker acknowledged
/// them. Rows are taken with `FOR UPDATE SKIP LOCKED` (several ingest instances); a record
/// sent twice is harmless, every service's erasure being a no-op the second time.
struct AccountDeletionOutbox: Outbox {
    let database: PostgresClient
    let producer: KafkaProducer
    let topic: String

    func publishPending(olderThan grace: Duration, limit: Int) async throws -> Int {
        let seconds = Double(grace.components.seconds) + Double(grace.components.attoseconds) / 1e18
        let producer = self.producer
        let topic = self.topic
        return try await database.withTransaction { connection in
            let rows = try await connection.query("""
                SELECT id, user_id, value FROM account_deletion_outbox
                WHERE created_at <= now() - make_interval(secs => $1::double precision)
                ORDER BY id LIMIT $2::bigint FOR UPDATE SKIP LOCKED
                """, [seconds, Int64(limit)])
            guard !rows.isEmpty else { return 0 }
            var ids: [Int64] = []
            var records: [KafkaProducerRecord] = []
            for row in rows {
                ids.append(try row.decode(Int64.self, "id"))
                records.append(KafkaProducerRecord(topic: topic, key: Array(try row.decode(String.self, "user_id").utf8),
                                                   value: Array(try row.decode(String.self, "value").utf8)))
            }
            for result in await producer.send(records) { _ = try result.get() }
            _ = try await connection.execute("DELETE FROM account_deletion_outbox WHERE id = ANY($1::bigint[])", [ids])
            return ids.count
        }
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
            ClosureService(name: "ingest-account-deletions") {
                while !Task.isCancelled {
                    do { try await runOnce() } catch {
                        logger.warning("account deletion scheduler failed; will retry", metadata: ["error": "\(error)"])
                    }
                    do { try await Task.sleep(for: interval) } catch { return }
                }
            },
            ClosureService(name: "ingest-pending-deletions") {
                while !Task.isCancelled {
                    do { pending.replace(hashes: try await store.openHashes()) } catch {
                        logger.warning("reading pending account deletions failed", metadata: ["error": "\(error)"])
                    }
                    do { try await Task.sleep(for: .seconds(1)) } catch { return }
                }
            },
        ]
    }
}
