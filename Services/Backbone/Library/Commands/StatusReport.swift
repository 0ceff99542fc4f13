import Foundation
import ServiceRuntime

/// What `backbone status` concludes from a snapshot: each line's state (`ok`, `degraded`,
/// `down`) with the reason on the line that caused it, and the whole system's health, which
/// is its exit status (0 healthy, 1 degraded, 2 down).
struct StatusReport: Encodable {
    enum Health: String, Encodable, Comparable {
        case healthy, degraded, down

        var exitCode: Int32 { self == .healthy ? 0 : self == .degraded ? 1 : 2 }

        static func < (a: Health, b: Health) -> Bool { a.exitCode < b.exitCode }
    }

    /// When a line turns degraded. The alert rules of `deploy/prometheus/alerts.yml` use the same figures.
    struct Thresholds {
        var lagSeconds: Double = 60
        var outboxAgeSeconds: Double = 60
        var transcodeQueuedAgeSeconds: Double = 300
        var transcodeFailuresPerHour: Int64 = 5
        var pendingUploadAgeSeconds: Double = 300
        var purgingAgeSeconds: Double = 3600
    }

    struct Dependency: Encodable { var state: Health; var reason: String? }

    struct Service: Encodable {
        var name: String
        var url: String
        var readiness: String
        var checks: [String: Bool]
        var state: Health
        var reason: String?
    }

    struct Group: Encodable {
        var group: String
        var topics: [String]
        var lagRecords: Int64
        var lagSeconds: Double?
        /// Records applied per second since the previous snapshot; nil on the first.
        var applyRatePerSecond: Double?
        var state: Health
        var reason: String?
    }

    struct DeadLetterQueue: Encodable {
        var topic: String
        var records: Int64
        var sinceLastReplay: Int64
        var lastReplayAt: Date?
        var state: Health
        var reason: String?
    }

    struct Outbox: Encodable {
        var name: String
        var service: String
        var entries: Int64
        var oldestAgeSeconds: Double?
        var state: Health
        var reason: String?
    }

    struct TranscodeQueue: Encodable {
        var queued: Int64
        var transcoding: Int64
        var oldestQueuedAgeSeconds: Double?
        var failedLastHour: Int64
        var state: Health
        var reason: String?
    }

    struct Uploads: Encodable {
        var uploading: Int64
        var pending: Int64
        var oldestPendingAgeSeconds: Double?
        var state: Health
        var reason: String?
    }

    struct Deletions: Encodable {
        var scheduled: Int64
        var purging: Int64
        var oldestPurgingAgeSeconds: Double?
        var state: Health
        var reason: String?
    }

    var status: Health = .healthy
    var exitCode: Int32 = 0
    var takenAt: Date
    /// Every line's reason that is not `ok`, worst first.
    var reasons: [String] = []
    var postgres: Dependency
    var kafka: Dependency
    var services: [Service] = []
    var consumerGroups: [Group] = []
    var deadLetterQueues: [DeadLetterQueue] = []
    var outboxes: [Outbox] = []
    var transcodeQueue: TranscodeQueue?
    var uploads: Uploads?
    var accountDeletions: Deletions?

    init(_ snapshot: StatusSnapshot, previous: StatusSnapshot?, thresholds: Thresholds = Thresholds()) {
        takenAt = snapshot.takenAt
        var problems: [(Health, String)] = []
        func judge(_ bad: Health, when condition: Bool, _ reason: @autoclosure () -> String) -> (Health, String?) {
            guard condition else { return (.healthy, nil) }
            let text = reason()
            problems.append((bad, text))
            return (bad, text)
        }
        func seconds(_ value: Double) -> String { String(format: "%.0f s", value) }

        var judged = judge(.down, when: snapshot.databaseError != nil, "PostgreSQL cannot be read: \(snapshot.databaseError ?? "")")
        postgres = Dependency(state: judged.0, reason: judged.1)
        judged = judge(.down, when: snapshot.kafkaError != nil, "Kafka cannot be read: \(snapshot.kafkaError ?? "")")
        kafka = Dependency(state: judged.0, reason: judged.1)

        for service in snapshot.services {
            let (state, reason) = judge(.down, when: service.state != "ready",
                                        "\(service.name) at \(service.url) is \(service.state.replacingOccurrences(of: "_", with: " "))"
                                            + (service.error.map { ": \($0)" } ?? ""))
            services.append(Service(name: service.name, url: service.url, readiness: service.state, checks: service.checks,
                                    state: state, reason: reason))
        }
        let elapsed = previous.map { snapshot.takenAt.timeIntervalSince($0.takenAt) } ?? 0
        for group in snapshot.groups {
            var rate: Double?
            if elapsed > 0, let before = previous?.groups.first(where: { $0.group == group.group }) {
                rate = max(0, Double(group.positionSum - before.positionSum) / elapsed)
            }
            let behind = group.lagSeconds ?? 0
            let (state, reason) = judge(.degraded, when: behind > thresholds.lagSeconds,
                                        "\(group.group) is \(seconds(behind)) behind (\(group.lagRecords) records on "
                                            + "\(group.topics.joined(separator: ", ")); over \(seconds(thresholds.lagSeconds))")
            consumerGroups.append(Group(group: group.group, topics: group.topics, lagRecords: group.lagRecords, lagSeconds: group.lagSeconds,
                                        applyRatePerSecond: rate, state: state, reason: reason))
        }
        for queue in snapshot.deadLetterQueues {
            let (state, reason) = judge(.degraded, when: queue.sinceLastReplay > 0,
                                        "\(queue.topic) received \(queue.sinceLastReplay) dead letter(s) since the last replay "
                                            + "(`backbone dlq list`)")
            deadLetterQueues.append(DeadLetterQueue(topic: queue.topic, records: queue.records, sinceLastReplay: queue.sinceLastReplay,
                                                    lastReplayAt: queue.lastReplayAt, state: state, reason: reason))
        }
        if let backlog = snapshot.backlog {
            for outbox in backlog.outboxes {
                let age = outbox.oldestAgeSeconds ?? 0
                let (state, reason) = judge(.degraded, when: age > thresholds.outboxAgeSeconds,
                                            "outbox \(outbox.outbox.name) of \(outbox.outbox.service): \(outbox.entries) entries, the oldest "
                                                + "waiting \(seconds(age)); over \(seconds(thresholds.outboxAgeSeconds))")
                outboxes.append(Outbox(name: outbox.outbox.name, service: outbox.outbox.service, entries: outbox.entries,
                                       oldestAgeSeconds: outbox.oldestAgeSeconds, state: state, reason: reason))
            }
            if let queue = backlog.transcode {
                let age = queue.oldestQueuedAgeSeconds ?? 0
                var (state, reason) = judge(.degraded, when: age > thresholds.transcodeQueuedAgeSeconds,
                                            "transcode queue: the oldest of \(queue.queued) queued job(s) has waited \(seconds(age)) "
                                                + "(\(queue.transcoding) in progress: is a transcode-worker running?)")
                if state == .healthy {
                    (state, reason) = judge(.degraded, when: queue.failedLastHour >= thresholds.transcodeFailuresPerHour,
                                            "transcode queue: \(queue.failedLastHour) job(s) failed in the last hour "
                                                + "(at least \(thresholds.transcodeFailuresPerHour))")
                }
                transcodeQueue = TranscodeQueue(queued: queue.queued, transcoding: queue.transcoding,
                                                oldestQueuedAgeSeconds: queue.oldestQueuedAgeSeconds, failedLastHour: queue.failedLastHour,
                                                state: state, reason: reason)
            }
            if let waiting = backlog.uploads {
                let age = waiting.oldestPendingAgeSeconds ?? 0
                let (state, reason) = judge(.degraded, when: age > thresholds.pendingUploadAgeSeconds,
                                            "uploads: \(waiting.pending) completed version(s) not yet queued for transcoding, the oldest "
                                                + "for \(seconds(age)) (can ingest reach Kafka?)")
                uploads = Uploads(uploading: waiting.uploading, pending: waiting.pending,
                                  oldestPendingAgeSeconds: waiting.oldestPendingAgeSeconds, state: state, reason: reason)
            }
            if let deletions = backlog.deletions {
                let age = deletions.oldestPurgingAgeSeconds ?? 0
                let (state, reason) = judge(.degraded, when: age > thresholds.purgingAgeSeconds,
                                            "account deletions: \(deletions.purging) purging, the oldest for \(seconds(age)) "
                                                + "without every service's confirmation")
                accountDeletions = Deletions(scheduled: deletions.scheduled, purging: deletions.purging,
                                             oldestPurgingAgeSeconds: deletions.oldestPurgingAgeSeconds, state: state, reason: reason)
            }
        }
        status = problems.map(\.0).max() ?? .healthy
        exitCode = status.exitCode
        reasons = problems.sorted { $0.0 > $1.0 }.map { "\($0.0.rawValue): \($0.1)" }
    }

    /// The JSON document (one line).
    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
