import Kafka
import Postgres

/// The consumer group's positions in Postgres, advanced in the read model's transaction.
struct OffsetStore: Sendable {
    let groupID: String
    let memberID: String

    /// Claims partitions for this member: bumps each one's generation (fencing off the
    /// previous owner) and returns where to resume.
    func claim(_ partitions: [KafkaTopicPartition], client: PostgresClient) async throws -> [KafkaTopicPartition: StoredClaim] {
        var claims: [KafkaTopicPartition: StoredClaim] = [:]
        for tp in partitions {
            let rows = try await client.query("""
                INSERT INTO consumer_offsets (group_id, topic, partition, next_offset, owner, generation)
                VALUES ($1, $2, $3, -1, $4, 1)
                ON CONFLICT (group_id, topic, partition) DO UPDATE
                    SET owner = EXCLUDED.owner, generation = consumer_offsets.generation + 1, updated_at = now()
                RETURNING next_offset, generation, cluster_id
                """, [groupID, tp.topic, Int(tp.partition), memberID])
            guard let row = rows.first else { continue }
            claims[tp] = StoredClaim(claim: PartitionOwnership.Claim(generation: try row.decode(Int64.self, "generation"),
                                                                     nextOffset: try row.decode(Int64.self, "next_offset")),
                                     clusterID: try row.decode(String?.self, "cluster_id"))
        }
        return claims
    }

    /// A claimed partition's stored position and the cluster it was stored against.
    struct StoredClaim: Sendable {
        var claim: PartitionOwnership.Claim
        var clusterID: String?
    }

    /// Where a claimed partition resumes, once its stored position was checked against the
    /// cluster it belongs to and the partition's watermarks.
    struct Checked: Sendable, Equatable {
        enum Reset: String, Sendable {
            /// Stored against another Kafka cluster (replaced, or an embedded broker restarted).
            case otherCluster = "other_cluster"
            /// Beyond the partition's high watermark (the topic was recreated or truncated).
            case beyondHighWatermark = "beyond_high_watermark"
            /// Below the low watermark: retention removed the records in between.
            case belowLowWatermark = "below_low_watermark"
        }

        var nextOffset: Int64
        var reset: Reset?
    }

    /// The rule: a position stored against another cluster, or beyond the high watermark,
    /// says nothing about this partition, which is then read from its earliest offset (the
    /// projections are idempotent per record, so a replay is harmless); a position below
    /// the low watermark resumes at the low watermark. An unknown stored cluster (a position
    /// from before positions were bound to clusters) is checked against the watermarks only.
    static func check(stored: StoredClaim, currentCluster: String?, low: Int64, high: Int64) -> Checked {
        let next = stored.claim.nextOffset
        if let storedCluster = stored.clusterID, let currentCluster, storedCluster != currentCluster, next >= 0 {
            return Checked(nextOffset: -1, reset: .otherCluster)
        }
        if next > high { return Checked(nextOffset: -1, reset: .beyondHighWatermark) }
        if next >= 0, next < low { return Checked(nextOffset: low, reset: .belowLowWatermark) }
        return Checked(nextOffset: next, reset: nil)
    }

    /// Stores a checked position and the cluster it now belongs to, fenced by the claim's
    /// generation. `historyLost`: the model applied records this partition no longer holds
    /// (recorded in `history_lost_at`, which `backbone rebuild` checks).
    func rebind(_ tp: KafkaTopicPartition, generation: Int64, nextOffset: Int64, clusterID: String?, historyLost: Bool,
                client: PostgresClient) async throws {
        _ = try await client.execute("""
            UPDATE consumer_offsets SET next_offset = $5, cluster_id = $6, updated_at = now(),
                history_lost_at = CASE WHEN $7::boolean THEN now() ELSE history_lost_at END
            WHERE group_id = $1 AND topic = $2 AND partition = $3 AND generation = $4
            """, [groupID, tp.topic, Int(tp.partition), generation, nextOffset, clusterID, historyLost])
    }

    /// Moves each partition from its `claim.nextOffset` to its new offset, in one statement,
    /// only where this member still owns it at that generation and nobody moved it
    /// meanwhile. Returns the partitions that were not moved (lost).
    func advance(_ moves: [(KafkaTopicPartition, PartitionOwnership.Claim, Int64)],
                 in connection: PostgresConnection) async throws -> Set<KafkaTopicPartition> {
        guard !moves.isEmpty else { return [] }
        let rows = try await connection.queryPrepared("""
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

    /// Claims back the partitions among `partitions` whose position an operator moved
    /// (`StoredOffsets.move` left them to `StoredOffsets.movedOwner`), bumping the generation
    /// again; returns where each resumes. Partitions another member claimed meanwhile are
    /// not touched.
    func reclaimMoved(_ partitions: [KafkaTopicPartition], client: PostgresClient) async throws -> [KafkaTopicPartition: StoredClaim] {
        guard !partitions.isEmpty else { return [:] }
        let rows = try await client.query("""
            UPDATE consumer_offsets o SET owner = $2, generation = o.generation + 1, updated_at = now()
            FROM unnest($3::text[], $4::int[]) AS v(topic, partition)
            WHERE o.group_id = $1 AND o.topic = v.topic AND o.partition = v.partition AND o.owner = $5
            RETURNING o.topic, o.partition, o.next_offset, o.generation, o.cluster_id
            """, [groupID, memberID, partitions.map(\.topic), partitions.map { Int($0.partition) }, StoredOffsets.movedOwner])
        var claims: [KafkaTopicPartition: StoredClaim] = [:]
        for row in rows {
            let tp = KafkaTopicPartition(topic: try row.decode(String.self, "topic"), partition: try row.decode(Int32.self, "partition"))
            claims[tp] = StoredClaim(claim: PartitionOwnership.Claim(generation: try row.decode(Int64.self, "generation"),
                                                                     nextOffset: try row.decode(Int64.self, "next_offset")),
                                     clusterID: try row.decode(String?.self, "cluster_id"))
        }
        return claims
    }

    /// Hands claimed-back partitions to `StoredOffsets.movedOwner` again (when taking them
    /// over failed half-way), so the next check retries.
    func releaseMoved(_ claims: [KafkaTopicPartition: PartitionOwnership.Claim], client: PostgresClient) async throws {
        for (tp, claim) in claims {
            _ = try await client.execute("""
                UPDATE consumer_offsets SET owner = $5
                WHERE group_id = $1 AND topic = $2 AND partition = $3 AND generation = $4
                """, [groupID, tp.topic, Int(tp.partition), claim.generation, StoredOffsets.movedOwner])
        }
    }
}
