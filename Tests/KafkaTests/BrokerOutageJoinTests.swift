import DevInfrastructure
import Foundation
import Kafka
import ServiceLogging
import Testing

extension KafkaIntegrationTests {
    /// The fault suite's analytics aggregator ended with no partitions (issue #15): its new
    /// member had sent JoinGroup when the broker went down, after the suite had restarted
    /// PostgreSQL. `pg_ctl` was started by `ProcessRunner` from the process that hosts the
    /// embedded broker and inherited every socket of it (librdkafka's mock accepts without
    /// close-on-exec); the postmaster and its backends kept a copy of the broker's end of
    /// that member's connection. Taking the broker down closed the mock's descriptor, not the
    /// connection: the member never saw a disconnect and waited for its JoinGroup answer
    /// (`max.poll.interval.ms` + 3 s, five minutes), unassigned, while the mock had dropped it.
    @Suite("A broker outage while a member joins")
    struct BrokerOutageJoinTests {
        @Test("a server started next to the embedded broker keeps none of its connections: a member whose broker goes down during JoinGroup joins once it is back")
        func memberJoinsAfterOutageDuringJoin() async throws {
            let (cluster, topic) = try clusterWithTopic("outage-join", partitions: 2)
            defer { cluster.shutdown() }
            let producer = try testProducer(cluster)
            let sent = await producer.send((0..<20).map { KafkaProducerRecord(topic: topic, key: bytes("k\($0)"), value: bytes("\($0)")) })
            #expect(sent.allSatisfy { (try? $0.get()) != nil })
            await producer.shutdown()

            let consumer = try KafkaConsumer(
                configuration: .init(bootstrapServers: cluster.bootstrapServers, groupID: uniqueName("g"), topics: [topic],
                                     clientID: "joining", sessionTimeout: .seconds(4)),
                rebalanceListener: FixedStartListener(), logger: testLogger)
            // The mock answers a first JoinGroup after 3 s (group.initial.rebalance.delay.ms):
            // half a second in, the member is waiting for that answer (a session timeout of
            // 4 s keeps the mock's later rebalance delays, session timeout − 1 s, short).
            try await Task.sleep(for: .milliseconds(500))
            // A server started now, as PostgreSQL is by `pg_ctl restart`, outliving the test's bound.
            let server = Task { await ProcessRunner.run("/bin/sleep", ["30"]) }
            try await Task.sleep(for: .milliseconds(200))
            try cluster.setAllBrokersDown()
            try await Task.sleep(for: .seconds(1))
            try cluster.setAllBrokersUp()

            let started = ContinuousClock.now
            let records = try await consume(consumer, count: 20, timeout: .seconds(20))
            #expect(records.count == 20, "consumed \(records.count) of 20 within \(ContinuousClock.now - started) after the outage")
            #expect(consumer.assignment().count == 2)
            await consumer.close()
            _ = server  // ends by itself
        }
    }
}
