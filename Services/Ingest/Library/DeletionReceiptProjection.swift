import Contracts
import Foundation
import Kafka
import Postgres
import Projection

/// `user.deletions.status.v1` → `account_deletion_services` (each service's erasure time) and,
/// once every service of a request erased, the request `completed`: the receipt. On the
/// projection runner; a confirmation seen again changes nothing (the first time stays).
struct DeletionReceiptProjection: Projection {
    typealias Event = UserDeletionStatus
    typealias Effects = Void

    func decode(_ record: KafkaConsumerRecord) throws -> UserDeletionStatus {
        let status = try ContractCoding.decode(UserDeletionStatus.self, from: record.value)
        guard status.schemaVersion == UserDeletionStatus.currentSchemaVersion else {
            throw InvalidRecord(description: "unsupported schemaVersion \(status.schemaVersion)")
        }
        guard !status.requestId.isEmpty, status.requestId.utf8.count <= 100, !status.service.isEmpty, status.service.utf8.count <= 100 else {
            throw InvalidRecord(description: "requestId and service must be 1–100 bytes")
        }
        return status
    }

    func apply(_ events: [ProjectedEvent<UserDeletionStatus>], in connection: PostgresConnection) async throws {
        guard !events.isEmpty else { return }
        let statuses = events.map(\.event)
        _ = try await connection.execute("""
            INSERT INTO account_deletion_services (request_id, service, erased_at)
            SELECT t.r, t.s, t.at::timestamptz FROM unnest($1::text[], $2::text[], $3::text[]) AS t(r, s, at)
            WHERE EXISTS (SELECT 1 FROM account_deletions d WHERE d.request_id = t.r)
            ON CONFLICT (request_id, service) DO UPDATE
                SET erased_at = COALESCE(account_deletion_services.erased_at, EXCLUDED.erased_at)
            """, [statuses.map(\.requestId), statuses.map(\.service), statuses.map { ContractCoding.formatTimestamp($0.erasedAt) }])
        _ = try await connection.execute("""
            UPDATE account_deletions d SET status = 'completed', user_id = NULL,
                completed_at = (SELECT max(erased_at) FROM account_deletion_services s WHERE s.request_id = d.request_id)
            WHERE d.request_id = ANY($1::text[]) AND d.status = 'purging'
              AND NOT EXISTS (SELECT 1 FROM account_deletion_services s WHERE s.request_id = d.request_id AND s.erased_at IS NULL)
            """, [Array(Set(statuses.map(\.requestId)))])
    }
}
