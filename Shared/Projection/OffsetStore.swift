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

    /// Moves each partition from its `claim.nextOffset` to its new offset, in one statement,
    /// only where this member still owns it at that generation and nobody moved it
    /// meanwhile. Returns the partitions that were not moved (lost).
    func advance(_ moves: [(KafkaTopicPartition, PartitionOwnership.Claim, Int64)],
                 in connection: PostgresConnection) async throws -> Set<KafkaTopicPartition> {
        guard !moves.isEmpty else { return [] }
        let rows = try await connection.query("""
            UPDATE consumer_offsets o SET next_offset = v.next_offset, updated_at = now()
            FROM unnest($2::text[], $3::int[], $4::bigint[], $5::bigint[], $6::bigint[])
                 AS v(topic, partition, generation, expected, next_offset)
            WHERE o.group_id = $1 AND o.topic = v.topic AND o.partition = v.partition
              AND o.generation = v.generation AND o.next_offset = v.expected
            RETURNING o.topic, o.partition
            """, [groupID, moves.map(\.0.topic), moves.map { Int($0.0.partition) }, moves.map(\.1.generation),
                  moves.map(\.1.nextOffset), moves.map(\.2)])
        var lost = Set(moves.map(\.0))
        for row in rows {
            lost.remove(KafkaTopicPartition(topic: try row.decode(String.self, "topic"), partition: Int32(try row.decode(Int64.self, "partition"))))
        }
        return lost
    }
}
