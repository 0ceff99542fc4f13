import Foundation
import Kafka
import Postgres

/// The consumer groups' stored positions (`consumer_offsets`) as an operator sees and moves
/// them: `backbone offsets` lists them, `backbone offsets reset` moves them.
///
/// A move bumps each partition's generation (so the owner's in-flight batch can no longer
/// commit over it) and hands the partition to `StoredOffsets.movedOwner`; a running owner
/// notices within `ProjectionRunnerConfiguration.movedPositionsCheckInterval`, claims it
/// back and re-reads it from the new position. With no member running, the next one to
/// start claims it there.
public enum StoredOffsets {
    /// The owner of a position an operator moved, until a member claims it back.
    public static let movedOwner = "backbone offsets reset"

    public struct Position: Sendable, Equatable {
        public var groupID: String
        public var partition: KafkaTopicPartition
        /// The next offset to process; -1 = nothing processed yet (the partition's earliest).
        public var nextOffset: Int64
        public var owner: String
        public var generation: Int64
        /// The cluster the position was stored against (`clusterIdentity`), nil before that was recorded.
        public var clusterID: String?
        public var updatedAt: Date
    }

    /// A partition moved by `move`: where it was and where it is now.
    public struct Move: Sendable, Equatable {
        public var partition: KafkaTopicPartition
        public var before: Int64
        public var after: Int64
        public var generation: Int64
    }

    /// Every stored position, of one group or all, ordered by group, topic and partition.
    public static func list(group: String?, client: PostgresClient) async throws -> [Position] {
        let rows = try await client.query("""
            SELECT group_id, topic, partition, next_offset, owner, generation, cluster_id, updated_at
            FROM consumer_offsets WHERE $1::text IS NULL OR group_id = $1
            ORDER BY group_id, topic, partition
            """, [group])
        return try rows.map { row in
            Position(groupID: try row.decode(String.self, "group_id"),
                     partition: KafkaTopicPartition(topic: try row.decode(String.self, "topic"),
                                                    partition: try row.decode(Int32.self, "partition")),
                     nextOffset: try row.decode(Int64.self, "next_offset"), owner: try row.decode(String.self, "owner"),
                     generation: try row.decode(Int64.self, "generation"), clusterID: try row.decode(String?.self, "cluster_id"),
                     updatedAt: try row.decode(Date.self, "updated_at"))
        }
    }

    /// Moves each partition's stored position of `group` to its offset, in one transaction,
    /// binding it to `clusterID`; partitions without a stored position are not created.
    public static func move(group: String, to offsets: [KafkaTopicPartition: Int64], clusterID: String?,
                            client: PostgresClient) async throws -> [Move] {
        guard !offsets.isEmpty else { return [] }
        let ordered = offsets.sorted { $0.key < $1.key }
        return try await client.withTransaction { connection in
            let rows = try await connection.query("""
                WITH old AS (
                    SELECT o.topic, o.partition, o.next_offset FROM consumer_offsets o
                    JOIN unnest($2::text[], $3::int[]) AS v(topic, partition) ON o.topic = v.topic AND o.partition = v.partition
                    WHERE o.group_id = $1 FOR UPDATE OF o
                )
                UPDATE consumer_offsets o SET next_offset = v.next_offset, owner = $5, generation = o.generation + 1,
                       cluster_id = $6, updated_at = now()
                FROM unnest($2::text[], $3::int[], $4::bigint[]) AS v(topic, partition, next_offset), old
                WHERE o.group_id = $1 AND o.topic = v.topic AND o.partition = v.partition
                  AND old.topic = v.topic AND old.partition = v.partition
                RETURNING o.topic, o.partition, old.next_offset AS before, o.next_offset AS after, o.generation
                """, [group, ordered.map(\.key.topic), ordered.map { Int($0.key.partition) }, ordered.map(\.value),
                      movedOwner, clusterID])
            return try rows.map { row in
                Move(partition: KafkaTopicPartition(topic: try row.decode(String.self, "topic"),
                                                    partition: try row.decode(Int32.self, "partition")),
                     before: try row.decode(Int64.self, "before"), after: try row.decode(Int64.self, "after"),
                     generation: try row.decode(Int64.self, "generation"))
            }.sorted { $0.partition < $1.partition }
        }
    }
}

extension StoredOffsets.Position {
    /// Stored against another cluster than `currentCluster`: the owner re-reads the partition
    /// from its earliest offset.
    public func isOtherCluster(_ currentCluster: String?) -> Bool {
        guard let clusterID, let currentCluster else { return false }
        return clusterID != currentCluster && nextOffset >= 0
    }

    /// Where the owner resumes in a partition holding `low..<high`, by the runner's own rule
    /// (`OffsetStore.check`).
    public func resumeOffset(low: Int64, high: Int64, currentCluster: String?) -> Int64 {
        if isOtherCluster(currentCluster) || nextOffset < 0 || nextOffset > high { return low }
        return Swift.max(nextOffset, low)
    }

    /// The records the owner still has to process in a partition holding `low..<high`.
    public func lag(low: Int64, high: Int64, currentCluster: String?) -> Int64 {
        Swift.max(0, high - resumeOffset(low: low, high: high, currentCluster: currentCluster))
    }
}
