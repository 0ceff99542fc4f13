import BackboneTestSupport
import DevInfrastructure
import Foundation
import Kafka
@testable import ServiceRuntime
import Testing

/// `/readyz`'s Kafka check after an outage: the fault suite's long run saw services whose
/// metadata client kept timing out long after the brokers were back, so they stayed not
/// ready. The probe now asks on a new client after a failed check.
@Suite("The Kafka readiness probe", .serialized, .timeLimit(.minutes(2)))
struct ReadinessProbeTests {
    @Test("ready, not ready while every broker is down, ready again once they are up, on a new client")
    func outage() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        try cluster.createTopic("probe.topic", partitions: 1)
        let probe = KafkaReadinessProbe(bootstrapServers: cluster.bootstrapServers, clientID: "probe-test")
        #expect(await probe.check())
        let before = probe.admin.openClient.map(ObjectIdentifier.init)

        try cluster.setAllBrokersDown()
        #expect(await Integration.eventually(timeout: .seconds(15), every: .milliseconds(200)) { await !probe.check() })
        // The client that saw the outage is gone; the next check makes a new one.
        #expect(probe.admin.openClient.map(ObjectIdentifier.init) != before)
        try cluster.setAllBrokersUp()
        #expect(await Integration.eventually(timeout: .seconds(30), every: .milliseconds(200)) { await probe.check() })
    }
}
