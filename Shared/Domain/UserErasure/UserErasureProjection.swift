import Auth
import Contracts
import Foundation
import Kafka
import Postgres
import Projection

/// What one service erases of a user, inside the erasure's transaction: its `DELETE`s (and,
/// before them, whatever it keeps outside PostgreSQL, such as objects in the store — those
/// deletions must be idempotent, since a rolled-back erasure runs again).
public struct UserErasureStep: Sendable {
    public let run: @Sendable (_ userID: String, _ connection: PostgresConnection) async throws -> Void

    public init(_ run: @escaping @Sendable (_ userID: String, _ connection: PostgresConnection) async throws -> Void) {
        self.run = run
    }

    /// Statements run in order, each with the user id as `$1`.
    public static func sql(_ statements: [String]) -> UserErasureStep {
        UserErasureStep { userID, connection in
            for statement in statements { _ = try await connection.execute(statement, [userID]) }
        }
    }

    /// `first` (what the service keeps outside PostgreSQL, such as objects in the store), then
    /// `statements` as `sql` runs them.
    public static func sql(_ statements: [String],
                           after first: @escaping @Sendable (_ userID: String, _ connection: PostgresConnection) async throws -> Void)
        -> UserErasureStep {
        let rows = sql(statements)
        return UserErasureStep { userID, connection in
            try await first(userID, connection)
            try await rows.run(userID, connection)
        }
    }
}

/// `user.deletions.v1` → one service's erasure, on the projection runner (its own consumer
/// group, offsets in the same transaction): under the service's erasure fence, the service's
/// `UserErasureStep`, the user listed in `erased_users` and the confirmation queued in
/// `user_erasure_outbox`, all in one transaction. A user already listed is a no-op, so a
/// re-delivered or replayed record erases nothing twice and confirms nothing twice.
public struct UserErasureProjection: Projection {
    public typealias Event = UserDeletionRecord

    /// The users erased by a committed batch (their hashes) and whether a confirmation is queued.
    public struct Effects: Sendable {
        var hashes: [String]
    }

    let erasedUsers: ErasedUsers
    let step: UserErasureStep
    let outbox: UserErasureOutbox
    let revoked: RevokedSubjects

    public init(erasedUsers: ErasedUsers, step: UserErasureStep, outbox: UserErasureOutbox, revoked: RevokedSubjects) {
        self.erasedUsers = erasedUsers
        self.step = step
        self.outbox = outbox
        self.revoked = revoked
    }

    public func decode(_ record: KafkaConsumerRecord) throws -> UserDeletionRecord {
        let deletion = try ContractCoding.decode(UserDeletionRecord.self, from: record.value)
        guard deletion.schemaVersion == UserDeletionRecord.currentSchemaVersion else {
            throw InvalidRecord(description: "unsupported schemaVersion \(deletion.schemaVersion)")
        }
        guard Identifier.isAcceptable(deletion.userId), !deletion.requestId.isEmpty, deletion.requestId.utf8.count <= 100 else {
            throw InvalidRecord(description: "userId and requestId are required")
        }
        return deletion
    }

    public func apply(_ events: [ProjectedEvent<UserDeletionRecord>], in connection: PostgresConnection) async throws -> Effects {
        var hashes: [String] = []
        var seen = Set<String>()
        for event in events where seen.insert(event.event.userId).inserted {
            let deletion = event.event
            let hash = ErasedUsers.hash(deletion.userId)
            try await erasedUsers.fence(in: connection)
            guard try await !erasedUsers.isListed(hash, in: connection) else { continue }
            try await step.run(deletion.userId, connection)
            let erasedAt = Date()
            _ = try await connection.execute("""
                INSERT INTO public.erased_users (service, user_hash, request_id, erased_at) VALUES ($1, $2, $3, $4)
                ON CONFLICT DO NOTHING
                """, [erasedUsers.service, hash, deletion.requestId, erasedAt])
            let status = UserDeletionStatus(requestId: deletion.requestId, service: erasedUsers.service, erasedAt: erasedAt)
            _ = try await connection.execute("""
                INSERT INTO public.user_erasure_outbox (service, request_id, value) VALUES ($1, $2, $3)
                """, [erasedUsers.service, deletion.requestId, String(decoding: try ContractCoding.encode(status), as: UTF8.self)])
            hashes.append(hash)
        }
        return Effects(hashes: hashes)
    }

    public func combine(_ effects: [Effects]) -> [Effects] {
        effects.count > 1 ? [Effects(hashes: effects.flatMap(\.hashes))] : effects
    }

    /// Refuses the erased users' tokens at once in this process, then publishes the
    /// confirmations (the relay publishes what a failure here left behind).
    public func afterCommit(_ effects: Effects) async throws {
        guard !effects.hashes.isEmpty else { return }
        revoked.insert(hashes: effects.hashes)
        _ = try await outbox.publishPending(olderThan: .zero, limit: 1_000)
    }
}
