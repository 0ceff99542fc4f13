import Kafka
import Postgres

/// The consumer group's positions in Postgres, advanced in the read model's transaction.
struct OffsetStore: Sendable {
    let groupID: String
    let memberID: String

    /// Claims partitions for this member: bumps each one's generation (fencing off the
    /// previous owner) and returns where to resume.
    func claim(_ partitions: [KafkaTopicPartition], client: PostgresClient) async throws -> [KafkaTopicPartition: PartitionOwnership.Claim] {
        var claims: [KafkaTopicPartition: PartitionOwnership.Claim] = [:]
        for tp in partitions {
            let rows = try await client.query("""
                INSERT INTO consumer_offsets (group_id, topic, partition, next_offset, owner, generation)
                VALUES ($1, $2, $3, -1, $4, 1)
                ON CONFLICT (group_id, topic, partition) DO UPDATE
                    SET owner = EXCLUDED.owner, generation = consumer_offsets.generation + 1, updated_at = now()
                RETURNING next_offset, generation
                """, [groupID, tp.topic, Int(tp.partition), memberID])
            guard let row = rows.first else { continue }
            claims[tp] = PartitionOwnership.Claim(generation: try row.decode(Int64.self, "generation"),
                                                 nextOffset: try row.decode(Int64.self, "next_offset"))
        }
        return claims
    }

    /// Moves a partition from `claim.nextOffset` to `next`, only if this member still owns it
    /// at that generation and nobody moved it meanwhile. `false`: the partition was lost.
    func advance(_ tp: KafkaTopicPartition, from claim: PartitionOwnership.Claim, to next: Int64,
                 in connection: PostgresConnection) async throws -> Bool {
        let updated = try await connection.execute("""
            UPDATE consumer_offsets SET next_offset = $1, updated_at = now()
            WHERE group_id = $2 AND topic = $3 AND partition = $4 AND generation = $5 AND next_offset = $6
            """, [next, groupID, tp.topic, Int(tp.partition), claim.generation, claim.nextOffset])
        return updated == 1
    }
}
