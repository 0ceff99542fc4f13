import DevInfrastructure
import Kafka
import Lifecycle
import Postgres
import Projection

extension PipelineDrain {
    /// Records of `group`'s topics beyond its stored positions (a partition without one counts
    /// from its earliest offset), per group: what each still has to process.
    static func backlog(of groups: [ConsumerGroup], client: PostgresClient, admin: KafkaAdmin) async throws -> [String: Int64] {
        guard !groups.isEmpty else { return [:] }
        let names = Set(groups.map(\.groupID))
        var stored: [String: [KafkaTopicPartition: StoredOffsets.Position]] = [:]
        for position in try await StoredOffsets.list(group: nil, client: client) where names.contains(position.groupID) {
            stored[position.groupID, default: [:]][position.partition] = position
        }
        let cluster = EmbeddedKafkaCluster.identity(reportedID: try await admin.clusterID(), bootstrapServers: admin.bootstrapServers)
        var marks: [KafkaTopicPartition: (low: Int64, high: Int64)] = [:]
        var backlog: [String: Int64] = [:]
        let topics = try await admin.listTopics()
        for group in groups {
            for topic in topics where group.topics.contains(topic.name) {
                for partition in topic.partitions {
                    let tp = KafkaTopicPartition(topic: topic.name, partition: partition)
                    if marks[tp] == nil { marks[tp] = try await admin.watermarks(topic: tp.topic, partition: tp.partition) }
                    let (low, high) = marks[tp]!
                    backlog[group.groupID, default: 0] += stored[group.groupID]?[tp]?.lag(low: low, high: high, currentCluster: cluster)
                        ?? high - low
                }
            }
        }
        return backlog
    }
}
