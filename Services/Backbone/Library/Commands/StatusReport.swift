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

    /// A line of the report: what was measured, its state, and the reason when it is not ok
    /// (encoded as the measured fields plus `state` and `reason`).
    struct Judged<Value: Encodable>: Encodable {
        var value: Value
        var state: Health
        var reason: String?

        enum Keys: String, CodingKey { case state, reason }

        func encode(to encoder: any Encoder) throws {
            try value.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(state, forKey: .state)
            try container.encodeIfPresent(reason, forKey: .reason)
        }
    }

    /// PostgreSQL and Kafka have nothing to show but their state.
    struct Reachability: Encodable {}

    var status: Health = .healthy
    var exitCode: Int32 = 0
    var takenAt: Date
    /// Every line's reason that is not `ok`, worst first.
    var reasons: [String] = []
    var postgres: Judged<Reachability>
    var kafka: Judged<Reachability>
    var services: [Judged<StatusSnapshot.ServiceReadiness>] = []
    var consumerGroups: [Judged<StatusSnapshot.GroupLag>] = []
    var deadLetterQueues: [Judged<StatusSnapshot.DeadLetterQueue>] = []
    var outboxes: [Judged<SystemBacklog.OutboxBacklog>] = []
    var transcodeQueue: Judged<SystemBacklog.TranscodeQueue>?
    var uploads: Judged<SystemBacklog.Uploads>?
    var accountDeletions: Judged<SystemBacklog.Deletions>?

    init(_ snapshot: StatusSnapshot, previous: StatusSnapshot?, thresholds: Thresholds = Thresholds()) {
        takenAt = snapshot.takenAt
        var problems: [(Health, String)] = []
        /// `value` judged `bad` for `reason` when `condition` holds, else ok.
        func judge<Value>(_ value: Value, _ bad: Health, when condition: Bool, _ reason: @autoclosure () -> String) -> Judged<Value> {
            guard condition else { return Judged(value: value, state: .healthy) }
            let text = reason()
            problems.append((bad, text))
            return Judged(value: value, state: bad, reason: text)
        }
        /// `value` degraded when `age` (nil: nothing waiting) is over `limit`, for the reason given of that age.
        func judgeAge<Value>(_ value: Value, _ age: Double?, over limit: Double, _ reason: (Double) -> String) -> Judged<Value> {
            let age = age ?? 0
            return judge(value, .degraded, when: age > limit, reason(age))
        }
        func seconds(_ value: Double) -> String { String(format: "%.0f s", value) }

        postgres = judge(Reachability(), .down, when: snapshot.databaseError != nil, "PostgreSQL cannot be read: \(snapshot.databaseError ?? "")")
        kafka = judge(Reachability(), .down, when: snapshot.kafkaError != nil, "Kafka cannot be read: \(snapshot.kafkaError ?? "")")
        services = snapshot.services.map { service in
            judge(service, .down, when: service.state != "ready",
                  "\(service.name) at \(service.url) is \(service.state.replacingOccurrences(of: "_", with: " "))"
                      + (service.error.map { ": \($0)" } ?? ""))
        }
        let elapsed = previous.map { snapshot.takenAt.timeIntervalSince($0.takenAt) } ?? 0
        consumerGroups = snapshot.groups.map { measured in
            var group = measured
            if elapsed > 0, let before = previous?.groups.first(where: { $0.group == group.group }) {
                group.applyRatePerSecond = max(0, Double(group.positionSum - before.positionSum) / elapsed)
            }
            return judgeAge(group, group.lagSeconds, over: thresholds.lagSeconds) { behind in
                "\(group.group) is \(seconds(behind)) behind (\(group.lagRecords) records on "
                    + "\(group.topics.joined(separator: ", "))); over \(seconds(thresholds.lagSeconds))"
            }
        }
        deadLetterQueues = snapshot.deadLetterQueues.map { queue in
            judge(queue, .degraded, when: queue.sinceLastReplay > 0,
                  "\(queue.topic) received \(queue.sinceLastReplay) dead letter(s) since the last replay (`backbone dlq list`)")
        }
        if let backlog = snapshot.backlog {
            outboxes = backlog.outboxes.map { outbox in
                judgeAge(outbox, outbox.oldestAgeSeconds, over: thresholds.outboxAgeSeconds) { age in
                    "outbox \(outbox.outbox.name) of \(outbox.outbox.service): \(outbox.entries) entries, the oldest "
                        + "waiting \(seconds(age)); over \(seconds(thresholds.outboxAgeSeconds))"
                }
            }
            transcodeQueue = backlog.transcode.map { queue in
                let age = queue.oldestQueuedAgeSeconds ?? 0
                if age > thresholds.transcodeQueuedAgeSeconds {
                    return judge(queue, .degraded, when: true, "transcode queue: the oldest of \(queue.queued) queued job(s) has waited "
                                     + "\(seconds(age)) (\(queue.transcoding) in progress: is a transcode-worker running?)")
                }
                return judge(queue, .degraded, when: queue.failedLastHour >= thresholds.transcodeFailuresPerHour,
                             "transcode queue: \(queue.failedLastHour) job(s) failed in the last hour "
                                 + "(at least \(thresholds.transcodeFailuresPerHour))")
            }
            uploads = backlog.uploads.map { waiting in
                judgeAge(waiting, waiting.oldestPendingAgeSeconds, over: thresholds.pendingUploadAgeSeconds) { age in
                    "uploads: \(waiting.pending) completed version(s) not yet queued for transcoding, the oldest "
                        + "for \(seconds(age)) (can ingest reach Kafka?)"
                }
            }
            accountDeletions = backlog.deletions.map { deletions in
                judgeAge(deletions, deletions.oldestPurgingAgeSeconds, over: thresholds.purgingAgeSeconds) { age in
                    "account deletions: \(deletions.purging) purging, the oldest for \(seconds(age)) "
                        + "without every service's confirmation"
                }
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
