import Foundation
import Kafka

/// What to read: per partition, the start offset, the high watermark captured before reading
/// (the stop point unless following), and whether records before a time must be skipped by
/// their timestamp (the fallback where the broker cannot look offsets up by time).
struct TopicReadPlan {
    struct Partition {
        var start: Int64
        var low: Int64
        var high: Int64
        var notBefore: Date?
    }

    var partitions: [KafkaTopicPartition: Partition] = [:]
    /// Partitions whose time lookup answered -1 while holding records, read from their start.
    var timeFallback: [KafkaTopicPartition] = []

    /// Partitions with records between their start and captured high watermark.
    var pending: Set<KafkaTopicPartition> {
        Set(partitions.filter { $0.value.start < $0.value.high }.map(\.key))
    }

    /// Asks the cluster for watermarks (and time offsets) of `topics`, limited to `partition`
    /// when given. Throws `unknownTopic`/`unknownPartition` rather than letting a consumer
    /// auto-create what does not exist.
    static func make(topics: [String], partition: Int32?, from start: StartPosition, settings: KafkaSettings) async throws -> TopicReadPlan {
        let admin = try settings.admin()
        let metadata = try await settings.listTopics(admin)
        var plan = TopicReadPlan()
        for topic in topics {
            guard let described = metadata.first(where: { $0.name == topic }) else {
                let known = metadata.map(\.name).filter { !KafkaSettings.isInternal($0) }.joined(separator: ", ")
                throw CommandError(code: .unknownTopic, message: "topic does not exist (topics: \(known.isEmpty ? "none" : known))",
                                   context: topic)
            }
            var ids = described.partitions
            if let partition {
                guard ids.contains(partition) else {
                    throw CommandError(code: .unknownPartition,
                                       message: "no partition \(partition) (the topic has \(ids.count))", context: topic)
                }
                ids = [partition]
            }
            var timeOffsets: [Int32: Int64] = [:]
            if case .time(let date) = start {
                do {
                    timeOffsets = try await admin.offsets(forTime: date, topic: topic)
                } catch {
                    timeOffsets = [:]  // treated like -1 everywhere: scan and filter by timestamp
                }
            }
            for id in ids {
                let key = KafkaTopicPartition(topic: topic, partition: id)
                let marks: (low: Int64, high: Int64)
                do {
                    marks = try await admin.watermarks(topic: topic, partition: id)
                } catch {
                    throw CommandError(code: .kafkaUnavailable, message: "cannot read watermarks: \(error.message)",
                                       context: key.description, isRetriable: error.isRetriable)
                }
                var entry = Partition(start: marks.low, low: marks.low, high: marks.high, notBefore: nil)
                switch start {
                case .beginning:
                    break
                case .end:
                    entry.start = marks.high
                case .offset(let offset):
                    entry.start = min(max(offset, marks.low), marks.high)
                case .time(let date):
                    if let found = timeOffsets[id], found >= 0 {
                        entry.start = min(max(found, marks.low), marks.high)
                    } else if marks.high > marks.low {
                        // -1: either no record at or after `date`, or a broker without a time
                        // index (the embedded mock). Scanning and filtering is right for both.
                        entry.notBefore = date
                        plan.timeFallback.append(key)
                    } else {
                        entry.start = marks.high
                    }
                }
                plan.partitions[key] = entry
            }
        }
        return plan
    }
}
