import Foundation
import JSON
import Kafka
import Lifecycle
import Postgres
import Projection
import ServiceLogging

extension OffsetsCommand {
    /// One partition to move: from its stored position to `target`.
    struct PlannedMove {
        var partition: KafkaTopicPartition
        var before: Int64
        var target: Int64
        var low: Int64
        var high: Int64
    }

    /// `backbone offsets reset --group G [--topic T] [--partition P] --to …`.
    static func reset(_ arguments: [String], logger: Logger) async throws -> Int32 {
        let args = try CommandLineArguments(arguments, valued: ["group", "topic", "partition", "to", "wait"])
        try args.only(["group", "topic", "partition", "to", "wait", "dry-run", "json"])
        guard args.positional.isEmpty, let group = args.value("group"), let toText = args.value("to") else {
            throw CommandLineArguments.UsageError(description: "usage: backbone offsets reset --group G [--topic T] [--partition P] "
                                                  + "--to earliest|latest|OFFSET|TIME [--dry-run] [--wait S] (see backbone offsets --help)")
        }
        guard let target = StartPosition(argument: toText) else {
            throw CommandLineArguments.UsageError(
                description: "--to must be earliest, latest, an offset (a whole number ≥ 0) or an ISO-8601 time, not '\(toText)'")
        }
        let partition = try args.int("partition")
        if let partition, partition < 0 || partition > Int(Int32.max) {
            throw CommandLineArguments.UsageError(description: "--partition must be a partition number ≥ 0")
        }
        let wait = try args.int("wait") ?? 10
        guard wait >= 0 else { throw CommandLineArguments.UsageError(description: "--wait must be ≥ 0 seconds") }
        let topic = args.value("topic")
        let settings = try KafkaSettings.resolve(logger: logger)
        let json = CommandOutput.wantsJSON(args)

        return try await DatabaseSettings.with(applicationName: "backbone-offsets-reset", logger: logger) { client in
            var positions = try await StoredOffsets.list(group: group, client: client)
            if positions.isEmpty { throw try await unknownGroup(group, client: client) }
            if let topic {
                let topics = Set(positions.map(\.partition.topic)).sorted()
                positions = positions.filter { $0.partition.topic == topic }
                if positions.isEmpty {
                    throw CommandError(code: .unknownTopic, message: "group \(group) has no stored positions in this topic "
                                       + "(its topics: \(topics.joined(separator: ", ")))", context: topic)
                }
            }
            if let partition {
                positions = positions.filter { $0.partition.partition == Int32(partition) }
                if positions.isEmpty {
                    throw CommandError(code: .unknownPartition, message: "group \(group) has no stored position for partition \(partition)",
                                       context: topic ?? "group \(group)")
                }
            }
            let admin = try settings.admin()
            let cluster = try await currentCluster(admin, settings: settings)
            let moves = try await plan(positions, to: target, admin: admin, settings: settings)
            if args.flag("dry-run") {
                print(report(moves.map { ($0, nil) }, group: group, json: json, dryRun: true), terminator: "")
                return 0
            }
            let moved = try await StoredOffsets.move(group: group, to: Dictionary(uniqueKeysWithValues: moves.map { ($0.partition, $0.target) }),
                                                     clusterID: cluster, client: client)
            var planned = Dictionary(uniqueKeysWithValues: moves.map { ($0.partition, $0) })
            for move in moved { planned[move.partition]?.before = move.before }
            let owners = try await awaitTakeOver(group: group, moved: moved, wait: .seconds(wait), json: json, client: client)
            let lines = moved.compactMap { move in planned[move.partition].map { ($0, owners[move.partition]) } }
            print(report(lines, group: group, json: json, dryRun: false), terminator: "")
            if !json {
                let waiting = lines.filter { $0.1 == nil }.count
                if waiting > 0 {
                    print("\(waiting) partition(s) not taken over within \(wait)s: the service is not running (or not consuming them);"
                          + " it starts there when it starts.")
                } else {
                    print("the running service took every moved partition over and re-reads it from there.")
                }
            }
            return 0
        }
    }

    /// The target offset of every selected partition, checked against its watermarks.
    static func plan(_ positions: [StoredOffsets.Position], to target: StartPosition, admin: KafkaAdmin,
                     settings: KafkaSettings) async throws -> [PlannedMove] {
        var moves: [PlannedMove] = []
        var timeOffsets: [String: [Int32: Int64]] = [:]
        var scans: [KafkaTopicPartition: TopicReadPlan.Partition] = [:]
        for position in positions {
            let tp = position.partition
            let marks: (low: Int64, high: Int64)
            do {
                marks = try await admin.watermarks(topic: tp.topic, partition: tp.partition)
            } catch {
                throw CommandError(code: error.code == .unknownTopic ? .unknownTopic : .kafkaUnavailable,
                                   message: "cannot read the partition's watermarks: \(error.message)", context: tp.description,
                                   isRetriable: error.isRetriable)
            }
            var move = PlannedMove(partition: tp, before: position.nextOffset, target: marks.low, low: marks.low, high: marks.high)
            switch target {
            case .beginning:
                break
            case .end:
                move.target = marks.high
            case .offset(let offset):
                if offset < marks.low {
                    throw CommandError(code: .offsetOutOfRange,
                                       message: "offset \(offset) is gone: retention removed the records before offset \(marks.low)"
                                           + " — use --to earliest (\(marks.low)) or a later offset", context: tp.description)
                }
                if offset > marks.high {
                    throw CommandError(code: .offsetOutOfRange,
                                       message: "offset \(offset) is beyond the high watermark \(marks.high) — use --to latest (\(marks.high))",
                                       context: tp.description)
                }
                move.target = offset
            case .time(let date):
                if timeOffsets[tp.topic] == nil { timeOffsets[tp.topic] = (try? await admin.offsets(forTime: date, topic: tp.topic)) ?? [:] }
                if let found = timeOffsets[tp.topic]?[tp.partition], found >= 0 {
                    move.target = min(max(found, marks.low), marks.high)
                } else if marks.high > marks.low {
                    // -1: no record at or after the time, or a broker without a time index
                    // (the embedded one): read the partition and look.
                    scans[tp] = TopicReadPlan.Partition(start: marks.low, low: marks.low, high: marks.high, notBefore: date)
                    move.target = marks.high
                } else {
                    move.target = marks.high
                }
            }
            moves.append(move)
        }
        if case .time(let date) = target, !scans.isEmpty {
            let found = try await firstOffsets(notBefore: date, in: scans, settings: settings)
            for index in moves.indices { if let offset = found[moves[index].partition] { moves[index].target = offset } }
        }
        return moves
    }

    /// Reads the partitions from their low watermark for the first record at or after `date`
    /// (partitions without one are absent: they go to their high watermark).
    static func firstOffsets(notBefore date: Date, in partitions: [KafkaTopicPartition: TopicReadPlan.Partition],
                             settings: KafkaSettings) async throws -> [KafkaTopicPartition: Int64] {
        var plan = TopicReadPlan()
        plan.partitions = partitions
        let progress = CommandProgress(command: "finding offsets for the time", total: Int(partitions.values.map { $0.high - $0.low }.reduce(0, +)))
        var found: [KafkaTopicPartition: Int64] = [:]
        let topics = Set(partitions.keys.map(\.topic)).sorted()
        try await TopicReader(settings: settings).scan(topics: topics, plan: plan, follow: false) { record in
            progress.advance()
            if found[record.topicPartition] == nil, let timestamp = record.timestamp, timestamp >= date {
                found[record.topicPartition] = record.offset
            }
            return found.count < partitions.count
        }
        progress.finish()
        return found
    }

    /// Waits until a running member took the moved partitions over (claimed them back from
    /// `StoredOffsets.movedOwner`); returns each taken partition's new owner.
    static func awaitTakeOver(group: String, moved: [StoredOffsets.Move], wait: Duration, json: Bool,
                              client: PostgresClient) async throws -> [KafkaTopicPartition: String] {
        let deadline = ContinuousClock.now + wait
        let wanted = Set(moved.map(\.partition))
        var owners: [KafkaTopicPartition: String] = [:]
        if !json && wait > .zero && !wanted.isEmpty {
            FileHandle.standardError.write(Data("waiting up to \(wait.wholeSeconds)s for the running service to take the partitions over…\n".utf8))
        }
        while true {
            for position in try await StoredOffsets.list(group: group, client: client)
            where wanted.contains(position.partition) && position.owner != StoredOffsets.movedOwner {
                owners[position.partition] = position.owner
            }
            if owners.count == wanted.count || ContinuousClock.now >= deadline { return owners }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    static func report(_ lines: [(PlannedMove, String?)], group: String, json: Bool, dryRun: Bool) -> String {
        if json {
            return lines.map { move, owner in
                "{\"group\":\(JSONString.quote(group)),\"topic\":\(JSONString.quote(move.partition.topic)),"
                    + "\"partition\":\(move.partition.partition),\"before\":\(move.before),\"after\":\(move.target),"
                    + "\"low\":\(move.low),\"high\":\(move.high),\"dryRun\":\(dryRun),"
                    + "\"takenOverBy\":\(owner.map(JSONString.quote) ?? "null")}\n"
            }.joined()
        }
        var cells = [["TOPIC", "PARTITION", "BEFORE", "AFTER", "CHANGE", "LOW", "HIGH", dryRun ? "" : "TAKEN OVER BY"]]
        for (move, owner) in lines {
            let before = move.before < 0 ? "earliest" : String(move.before)
            let change = move.target - max(move.before, move.low)
            cells.append([move.partition.topic, String(move.partition.partition), before, String(move.target),
                          change > 0 ? "+\(change)" : String(change), String(move.low), String(move.high),
                          dryRun ? "" : owner ?? "(not running)"])
        }
        return (dryRun ? "dry run: nothing changed; group \(group) would move:\n" : "group \(group) moved:\n") + CommandOutput.table(cells)
    }
}
