import Foundation
import Kafka
import ServiceRuntime
import Testing
@testable import BackboneCLI
@testable import Projection
@testable import ServiceRuntime

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

    /// A snapshot with a backlog: one outbox whose oldest entry waited `outboxAge`, and the transcode queue.
    static func snapshot(outboxAge: Double?, queue: SystemBacklog.TranscodeQueue) -> StatusSnapshot {
        var snapshot = Self.snapshot()
        var backlog = SystemBacklog()
        let table = SystemBacklog.outboxTables.first { $0.name == "transcode-status" }!
        backlog.outboxes = [SystemBacklog.OutboxBacklog(outbox: table, entries: outboxAge == nil ? 0 : 12, oldestAgeSeconds: outboxAge)]
        backlog.transcode = queue
        backlog.uploads = SystemBacklog.Uploads(uploading: 1, pending: 0, oldestPendingAgeSeconds: nil)
        backlog.deletions = SystemBacklog.Deletions(scheduled: 2, purging: 0, oldestPurgingAgeSeconds: nil)
        snapshot.backlog = backlog
        return snapshot
    }

    static let idleQueue = SystemBacklog.TranscodeQueue(queued: 0, transcoding: 0, oldestQueuedAgeSeconds: nil, failedLastHour: 0)

    @Test("an outbox whose oldest entry waited over 60 s is degraded (exit 1) with the reason on its line; under it, or empty, it is ok")
    func staleOutboxDegrades() throws {
        let report = StatusReport(Self.snapshot(outboxAge: 95, queue: Self.idleQueue), previous: nil)
        #expect(report.exitCode == 1 && report.status == .degraded)
        let outbox = try #require(report.outboxes.first)
        #expect(outbox.state == .degraded)
        #expect(outbox.reason == "outbox transcode-status of transcode-worker: 12 entries, the oldest waiting 95 s; over 60 s")
        #expect(report.reasons == ["degraded: outbox transcode-status of transcode-worker: 12 entries, the oldest waiting 95 s; over 60 s"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
        let line = try #require((document["outboxes"] as? [[String: Any]])?.first)
        #expect(line["name"] as? String == "transcode-status" && line["state"] as? String == "degraded" && line["oldestAgeSeconds"] as? Double == 95)
        #expect((line["reason"] as? String)?.contains("oldest waiting 95 s") == true)

        #expect(StatusReport(Self.snapshot(outboxAge: 30, queue: Self.idleQueue), previous: nil).exitCode == 0)
        let empty = StatusReport(Self.snapshot(outboxAge: nil, queue: Self.idleQueue), previous: nil)
        #expect(empty.exitCode == 0 && empty.outboxes.first?.state == .healthy && empty.outboxes.first?.reason == nil)
    }

    @Test("the transcode queue is degraded when its oldest queued job waited over 300 s or 5 jobs failed in the hour, with the reason on its line")
    func transcodeQueueDegrades() throws {
        let stalled = StatusReport(Self.snapshot(outboxAge: nil, queue: SystemBacklog.TranscodeQueue(
            queued: 3, transcoding: 0, oldestQueuedAgeSeconds: 400, failedLastHour: 0)), previous: nil)
        #expect(stalled.exitCode == 1 && stalled.transcodeQueue?.state == .degraded)
        #expect(stalled.transcodeQueue?.reason
                == "transcode queue: the oldest of 3 queued job(s) has waited 400 s (0 in progress: is a transcode-worker running?)")
        #expect(stalled.reasons.first?.hasPrefix("degraded: transcode queue: the oldest of 3") == true)

        let failing = StatusReport(Self.snapshot(outboxAge: nil, queue: SystemBacklog.TranscodeQueue(
            queued: 0, transcoding: 1, oldestQueuedAgeSeconds: nil, failedLastHour: 5)), previous: nil)
        #expect(failing.exitCode == 1 && failing.transcodeQueue?.state == .degraded)
        #expect(failing.transcodeQueue?.reason == "transcode queue: 5 job(s) failed in the last hour (at least 5)")

        let busy = StatusReport(Self.snapshot(outboxAge: nil, queue: SystemBacklog.TranscodeQueue(
            queued: 8, transcoding: 2, oldestQueuedAgeSeconds: 120, failedLastHour: 4)), previous: nil)
        #expect(busy.exitCode == 0 && busy.transcodeQueue?.state == .healthy && busy.transcodeQueue?.reason == nil)
    }

    @Test("a sparkline scales a series to its own maximum (flat at 0: all low bars), and the history keeps the last 60 looks")
    func sparklines() {
        #expect(StatusHistory.sparkline([0, 1, 2, 4, 8]) == "▁▂▃▅█")
        #expect(StatusHistory.sparkline([3, 3, 3]) == "███")
        #expect(StatusHistory.sparkline([0, 0, 0]) == "▁▁▁")
        #expect(StatusHistory.sparkline([]) == "")

        var history = StatusHistory()
        let start = Date()
        var previous: StatusSnapshot?
        for look in 0..<61 {
            let snapshot = Self.snapshot(lagSeconds: Double(look), positionSum: Int64(100 * look), at: start.addingTimeInterval(Double(look)))
            history.add(StatusReport(snapshot, previous: previous))
            previous = snapshot
        }
        #expect(history.lag["analytics-aggregator"]?.count == StatusHistory.length)
        #expect(history.lag["analytics-aggregator"]?.first == 1, "the oldest look fell out")
        #expect(history.rate["analytics-aggregator"]?.allSatisfy { $0 == 100 } == true, "60 rates, from the second look on")
    }

    @Test("the terminal's redraw clears the screen, then shows every section, the lag and rate sparklines, and each reason on its line")
    func redraw() throws {
        var history = StatusHistory()
        let start = Date()
        var previous: StatusSnapshot?
        for (look, lag) in [0.0, 10, 20, 40, 80].enumerated() {
            var snapshot = Self.snapshot(outboxAge: 95, queue: SystemBacklog.TranscodeQueue(
                queued: 3, transcoding: 0, oldestQueuedAgeSeconds: 400, failedLastHour: 0))
            snapshot.takenAt = start.addingTimeInterval(Double(look))
            snapshot.groups[0].lagSeconds = lag
            snapshot.groups[0].positionSum = [0, 10, 30, 30, 70][look]
            history.add(StatusReport(snapshot, previous: previous))
            previous = snapshot
        }
        var last = try #require(previous)
        last.services[1] = StatusSnapshot.ServiceReadiness(name: "service-1", url: "http://127.0.0.1:9001", state: "unreachable",
                                                            error: "connection refused")
        last.deadLetterQueues[0].sinceLastReplay = 2
        let report = StatusReport(last, previous: nil)
        let frame = StatusScreen.redraw(report, history: history, interval: 1)
        #expect(frame.hasPrefix(StatusScreen.clear))
        #expect(frame.contains("backbone status — DOWN"))
        for section in ["PostgreSQL ok", "Kafka      ok", "SERVICE", "CONSUMER GROUP", "DEAD-LETTER TOPIC", "OUTBOX", "transcode queue",
                        "uploads", "account deletions"] {
            #expect(frame.contains(section), "the frame shows \(section):\n\(frame)")
        }
        let lines = frame.split(separator: "\n")
        let group = try #require(lines.first { $0.hasPrefix("analytics-aggregator") }, "\(frame)")
        #expect(group.contains("▁▂▃▅█"), "lag over the last looks: \(group)")
        #expect(group.contains("▃▅▁█"), "rates 10, 20, 0, 40 a second: \(group)")
        #expect(group.contains("← analytics-aggregator is 80 s behind"), "\(group)")
        #expect(lines.contains { $0.hasPrefix("service-1") && $0.contains("← service-1 at http://127.0.0.1:9001 is unreachable: connection refused") })
        #expect(lines.contains { $0.hasPrefix("reading.events.v2.dlq") && $0.contains("← reading.events.v2.dlq received 2 dead letter(s)") })
        #expect(lines.contains { $0.hasPrefix("transcode-status") && $0.contains("← outbox transcode-status of transcode-worker") })
        #expect(lines.contains { $0.hasPrefix("transcode queue") && $0.contains("← transcode queue: the oldest of 3 queued job(s)") })
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
