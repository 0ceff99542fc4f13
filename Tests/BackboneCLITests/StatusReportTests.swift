import Foundation
import Kafka
import ServiceRuntime
import Testing
@testable import BackboneCLI
@testable import Projection

/// How `backbone status` judges what it measured, and how a projection measures its lag in
/// seconds: no service needed.
@Suite("Status report")
struct StatusReportTests {
    static func snapshot(lagSeconds: Double = 0, positionSum: Int64 = 100, at time: Date = Date(),
                         services: [String] = ["ready", "ready"]) -> StatusSnapshot {
        var snapshot = StatusSnapshot()
        snapshot.takenAt = time
        snapshot.services = services.enumerated().map {
            StatusSnapshot.ServiceReadiness(name: "service-\($0.offset)", url: "http://127.0.0.1:\(9000 + $0.offset)", state: $0.element,
                                            error: $0.element == "ready" ? nil : "/readyz answered 503 (kafka unreachable)")
        }
        snapshot.groups = [StatusSnapshot.GroupLag(group: "analytics-aggregator", topics: ["reading.events.v2"], lagRecords: 1_200,
                                                   lagSeconds: lagSeconds, positionSum: positionSum)]
        snapshot.deadLetterQueues = [StatusSnapshot.DeadLetterQueue(topic: "reading.events.v2.dlq", records: 4, sinceLastReplay: 0)]
        snapshot.backlog = SystemBacklog()
        return snapshot
    }

    @Test("a group over the threshold is degraded (exit 1) with the reason on its line; its apply rate comes from two snapshots")
    func laggingGroupDegrades() throws {
        let start = Date()
        let report = StatusReport(Self.snapshot(lagSeconds: 90, positionSum: 600, at: start.addingTimeInterval(2)),
                                  previous: Self.snapshot(positionSum: 100, at: start))
        #expect(report.exitCode == 1 && report.status == .degraded)
        let group = try #require(report.consumerGroups.first)
        #expect(group.state == .degraded)
        #expect(group.reason == "analytics-aggregator is 90 s behind (1200 records on reading.events.v2); over 60 s")
        #expect(group.value.applyRatePerSecond == 250)
        #expect(report.reasons == ["degraded: analytics-aggregator is 90 s behind (1200 records on reading.events.v2); over 60 s"])
        #expect(report.deadLetterQueues.first?.state == .healthy, "dead letters all replayed")

        var thresholds = StatusReport.Thresholds()
        thresholds.lagSeconds = 120
        #expect(StatusReport(Self.snapshot(lagSeconds: 90), previous: nil, thresholds: thresholds).exitCode == 0)
    }

    @Test("a service not ready is down (exit 2), listed before what is only degraded, and the JSON document carries each line's state and reason")
    func serviceDownWins() throws {
        let report = StatusReport(Self.snapshot(lagSeconds: 90, services: ["ready", "not_ready"]), previous: nil)
        #expect(report.exitCode == 2 && report.status == .down)
        #expect(report.reasons.count == 2)
        #expect(report.reasons.first == "down: service-1 at http://127.0.0.1:9001 is not ready: /readyz answered 503 (kafka unreachable)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        #expect(document["status"] as? String == "down" && document["exitCode"] as? Int == 2)
        let services = try #require(document["services"] as? [[String: Any]])
        #expect(services[1]["readiness"] as? String == "not_ready" && services[1]["state"] as? String == "down")
        #expect(services[0]["reason"] == nil && services[0]["state"] as? String == "healthy")
        let group = try #require((document["consumerGroups"] as? [[String: Any]])?.first)
        #expect(group["lagSeconds"] as? Double == 90 && group["positionSum"] == nil && group["applyRatePerSecond"] == nil)
        #expect((document["postgres"] as? [String: Any])?["state"] as? String == "healthy")
    }

    @Test("a projection's lag in seconds: 0 while level, then the time since the later of the last applied record and the last level moment")
    func lagClock() {
        let partition = KafkaTopicPartition(topic: "reading.events.v2", partition: 0)
        let start = Date(timeIntervalSince1970: 1_000_000)
        var clock = ConsumerLagClock(started: start)
        #expect(clock.seconds(partition, records: 0, now: start.addingTimeInterval(10)) == 0)
        // Idle an hour, then a burst: only seconds behind, not an hour.
        #expect(clock.seconds(partition, records: 50, now: start.addingTimeInterval(13)) == 3)
        // Stuck from there on: the lag grows with the clock.
        #expect(clock.seconds(partition, records: 50, now: start.addingTimeInterval(70)) == 60)
        // Working through records an hour old: an hour behind.
        clock.applied([KafkaConsumerRecord(topic: partition.topic, partition: 0, offset: 1, key: nil, value: [],
                                           timestamp: start.addingTimeInterval(3_000), headers: [])])
        clock.lastLevel[partition] = start
        #expect(clock.seconds(partition, records: 10, now: start.addingTimeInterval(6_600)) == 3_600)
    }
}
