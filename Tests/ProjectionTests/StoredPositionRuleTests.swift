import DevInfrastructure
import Kafka
@testable import Projection
import Testing

@Suite("Stored positions are checked against the cluster and the partition")
struct StoredPositionRuleTests {
    static func stored(_ next: Int64, cluster: String?) -> OffsetStore.StoredClaim {
        OffsetStore.StoredClaim(claim: PartitionOwnership.Claim(generation: 3, nextOffset: next), clusterID: cluster)
    }

    @Test("positions over an embedded broker are bound to its id and listener (its id alone may repeat); a real cluster's id stands alone")
    func identity() {
        let embedded = EmbeddedKafkaCluster.clusterIdentity
        #expect(embedded.identity(of: "mockCluster1fd9c400f7bc", bootstrapServers: "127.0.0.1:35357")
                != embedded.identity(of: "mockCluster1fd9c400f7bc", bootstrapServers: "127.0.0.1:40121"))
        #expect(KafkaClusterIdentity.clusterID.identity(of: "4L6g3nShT-eMCtK--X86sw", bootstrapServers: "kafka-1:9092")
                == KafkaClusterIdentity.clusterID.identity(of: "4L6g3nShT-eMCtK--X86sw", bootstrapServers: "kafka-2:9092"))
        #expect(embedded.identity(of: nil, bootstrapServers: "x:1") == nil)
        // The operator commands, pointed at either stack, find the rule by the id.
        #expect(EmbeddedKafkaCluster.identity(reportedID: "mockCluster1fd9c400f7bc", bootstrapServers: "127.0.0.1:35357")
                == "mockCluster1fd9c400f7bc@127.0.0.1:35357")
        #expect(EmbeddedKafkaCluster.identity(reportedID: "4L6g3nShT-eMCtK--X86sw", bootstrapServers: "kafka-1:9092")
                == "4L6g3nShT-eMCtK--X86sw")
    }

    @Test("the rule: another cluster or beyond the high watermark → earliest; below the low watermark → low; else as stored")
    func rule() {
        #expect(OffsetStore.check(stored: Self.stored(120, cluster: "old"), currentCluster: "new", low: 0, high: 500)
                == .init(nextOffset: -1, reset: .otherCluster))
        #expect(OffsetStore.check(stored: Self.stored(120, cluster: "c1"), currentCluster: "c1", low: 0, high: 40)
                == .init(nextOffset: -1, reset: .beyondHighWatermark))
        #expect(OffsetStore.check(stored: Self.stored(10, cluster: "c1"), currentCluster: "c1", low: 25, high: 40)
                == .init(nextOffset: 25, reset: .belowLowWatermark))
        #expect(OffsetStore.check(stored: Self.stored(30, cluster: "c1"), currentCluster: "c1", low: 0, high: 40)
                == .init(nextOffset: 30, reset: nil))
        #expect(OffsetStore.check(stored: Self.stored(40, cluster: nil), currentCluster: "c1", low: 0, high: 40)
                == .init(nextOffset: 40, reset: nil))
        #expect(OffsetStore.check(stored: Self.stored(-1, cluster: "old"), currentCluster: "new", low: 0, high: 40)
                == .init(nextOffset: -1, reset: nil))
    }
}
