import AnalyticsAggregator
import Contracts
import DevInfrastructure
import Foundation
import JSON
import Kafka
import Postgres
import Projection
import ServiceLogging

/// One run of `backbone rebuild`.
///
/// A model is fed by one topic or several (the catalog: uploads, requests, statuses); everything
/// below is per partition of every one of them, so one topic is simply the smallest case.
///
/// 1. Checks the topics: every partition of each must still hold its records from offset 0
///    (unless `--allow-gaps`), and the live group's stored positions must belong to this cluster.
/// 2. Creates the shadow (or resumes the one an interrupted run left) and applies the topics
///    to it, batch by batch, each batch one transaction with the shadow's positions — never
///    past the live consumer's stored position in any partition, which it chases.
/// 3. Once level with the live consumer in every partition of every topic: with `--dry-run`,
///    catches up to the live positions in
///    a REPEATABLE READ snapshot holding both the live tables and their offsets, compares and
///    drops the shadow; otherwise swaps (see `swap`).
// `@unchecked Sendable` for one field: every stored property is immutable and Sendable except
// `progress` (a `CommandProgress`, not thread-safe), which only the command's own task touches —
// the rebuild runs on it (handed to `Interruptible.run`); no child task reports progress.
final class Rebuilder: @unchecked Sendable {
    struct Options: Sendable {
        var dryRun = false
        var allowGaps = false
        var batchRecords = 4_000
        var rowLimit = 20
    }

    let target: RebuildTarget
    let options: Options
    let databaseURL: String
    let settings: KafkaSettings
    let progress: CommandProgress
    let logger: Logger

    init(target: RebuildTarget, options: Options, databaseURL: String, settings: KafkaSettings, progress: CommandProgress,
         logger: Logger) {
        self.target = target
        self.options = options
        self.databaseURL = databaseURL
        self.settings = settings
        self.progress = progress
        self.logger = logger
    }

    static func isCancellation(_ error: any Error) -> Bool {
        if error is CancellationError { return true }
        if let error = error as? PostgresError, error.code == .cancelled || error.sqlState == "57014" { return true }
        return false
    }

    /// Partition (of every topic) → low and high watermark.
    typealias Watermarks = [KafkaTopicPartition: (low: Int64, high: Int64)]

    func run() async throws -> Int32 {
        let started = ContinuousClock.now
        let (cluster, marks) = try await inspectTopics()
        let model = try await ShadowModel.open(target: target, url: databaseURL, logger: logger)
        do {
            let status = try await run(model, cluster: cluster, marks: marks, started: started)
            await model.close()
            return status
        } catch {
            await model.close()
            throw error
        }
    }

    private func run(_ model: ShadowModel, cluster: String?, marks: Watermarks, started: ContinuousClock.Instant) async throws -> Int32 {
        let applier = try target.makeApplier(settings.brokers, databaseURL)
        var positions = try await prepare(model, cluster: cluster, marks: marks)
        let feed = try ShadowFeed(settings: settings, topics: target.topics, starts: positions.mapValues(\.next))
        do {
            var state = RunState(positions: positions)
            let source = Source(feed: feed, applier: applier)
            try await chase(model, source: source, cluster: cluster, marks: marks, state: &state)
            let status: Int32
            var swapMilliseconds: Int?
            if options.dryRun {
                status = try await compare(model, source: source, cluster: cluster, marks: marks, state: &state)
            } else {
                swapMilliseconds = try await swap(model, source: source, cluster: cluster, marks: marks, state: &state)
                status = 0
            }
            positions = state.positions
            await feed.close()
            let seconds = CommandLoop.seconds(ContinuousClock.now - started)
            let applied = state.applied
            progress.report(options.dryRun ? "compared" : "swapped", [
                ("model", .string(target.name)), ("records", .int(applied)), ("skipped", .int(state.skipped)),
                ("seconds", .double(seconds)), ("rate", .double(seconds > 0 ? Double(applied) / seconds : 0)),
                ("positions", .json(Self.json(positions.mapValues(\.next)))),
            ] + (swapMilliseconds.map { [("swapMilliseconds", .int($0))] } ?? []), text: options.dryRun
                ? "dry run done: \(applied) records re-projected in \(String(format: "%.1f", seconds)) s; the shadow tables were dropped"
                : "rebuilt \(target.name): \(applied) records in \(String(format: "%.1f", seconds)) s "
                    + "(\(String(format: "%.0f", seconds > 0 ? Double(applied) / seconds : 0)) records/s"
                    + (state.skipped > 0 ? ", \(state.skipped) undecodable records skipped as the live consumer does" : "")
                    + "); swapped in \(swapMilliseconds ?? 0) ms; the new tables are live and \(target.service) continues from its own position")
            return status
        } catch {
            await feed.close()
            throw error
        }
    }

    struct RunState {
        var positions: [KafkaTopicPartition: ShadowModel.Position]
        var applied = 0
        var skipped = 0
        var bounds: [KafkaTopicPartition: Int64] = [:]

        var done: Int { positions.values.reduce(0) { $0 + Int($1.next - $1.start) } }
        var total: Int { positions.reduce(0) { $0 + Int(max(bounds[$1.key] ?? $1.value.next, $1.value.next) - $1.value.start) } }
        var caughtUp: Bool { bounds.allSatisfy { (positions[$0.key]?.next ?? 0) >= $0.value } }
    }

    // MARK: - Checks

    /// The cluster's identity and the watermarks of every partition of every topic.
    func inspectTopics() async throws -> (String?, Watermarks) {
        let admin = try settings.admin()
        let listed = try await settings.listTopics(admin)
        var found: [(name: String, partitions: [Int32])] = []
        for name in target.topics {
            guard let topic = listed.first(where: { $0.name == name }) else {
                throw CommandError(code: .unknownTopic, message: "the topic does not exist, so there is nothing to rebuild from "
                                       + "(is KAFKA_BROKERS the cluster \(target.service) reads?)", context: name)
            }
            found.append((name, topic.partitions))
        }
        let cluster: String?
        do {
            cluster = EmbeddedKafkaCluster.identity(reportedID: try await admin.clusterID(), bootstrapServers: settings.brokers)
        } catch {
            throw CommandError(code: .kafkaUnavailable, message: "cannot read the cluster id: \(error.message)", context: settings.brokers,
                               isRetriable: true)
        }
        var marks: Watermarks = [:]
        for (name, partitions) in found {
            for partition in partitions {
                do {
                    marks[KafkaTopicPartition(topic: name, partition: partition)] = try await admin.watermarks(topic: name, partition: partition)
                } catch {
                    throw CommandError(code: .kafkaUnavailable, message: "cannot read watermarks: \(error.message)",
                                       context: "\(name)[\(partition)]", isRetriable: true)
                }
            }
        }
        return (cluster, marks)
    }

    /// Resumes or creates the shadow, after the retention check.
    func prepare(_ model: ShadowModel, cluster: String?, marks: Watermarks) async throws -> [KafkaTopicPartition: ShadowModel.Position] {
        try await model.dropRetired()  // left by a crash right after an earlier swap committed
        try checkHistory(try await model.livePositions(in: model.connection))
        if let existing = try await model.load() {
            if existing.clusterID == cluster, Set(existing.positions.keys) == Set(marks.keys) {
                try checkRetention(marks, from: existing.positions.mapValues(\.next))
                progress.report("resumed", [("model", .string(target.name)), ("done", .int(existing.positions.values.reduce(0) {
                    $0 + Int($1.next - $1.start)
                }))], text: "resuming the interrupted \(target.name) rebuild (schema \(target.shadowSchema))")
                return existing.positions
            }
            progress.report("restarted", [("model", .string(target.name))],
                            text: "the shadow of an interrupted \(target.name) rebuild was built from another cluster, topics or "
                                + "partition count; starting over")
        }
        try checkRetention(marks, from: marks.mapValues { _ in 0 })
        let starts = marks.mapValues { options.allowGaps ? max(0, $0.low) : 0 }
        // The live positions' checks, before anything is created.
        _ = try bounds(try await model.livePositions(in: model.connection), cluster: cluster, marks: marks,
                       positions: starts.mapValues { ShadowModel.Position(start: $0, next: $0) })
        try await model.create(clusterID: cluster, starts: starts)
        progress.report("started", [("model", .string(target.name)), ("partitions", .int(marks.count)),
                                    ("schema", .string(target.shadowSchema))],
                        text: "rebuilding \(target.name) from \(target.topicList) (\(marks.count) partitions) into schema \(target.shadowSchema)")
        return starts.mapValues { ShadowModel.Position(start: $0, next: $0) }
    }

    /// Refuses when the live model holds records its topics no longer have — the live consumer
    /// re-read a partition from the start because its stored position belonged to another
    /// cluster or lay beyond the high watermark (an embedded broker of `backbone dev` started
    /// empty, a topic recreated) — naming the partitions, unless `--allow-gaps`. A dry run
    /// says so and goes on: its difference is then what a rebuild would drop.
    func checkHistory(_ live: [KafkaTopicPartition: ShadowModel.LivePosition]) throws {
        let lost = live.filter { $0.value.historyLostAt != nil }.sorted { $0.key < $1.key }
        guard !lost.isEmpty, !options.allowGaps else { return }
        let list = lost.map { "\($0.key.topic) partition \($0.key.partition) (since \($0.value.historyLostAt!))" }
        let message = "the live model holds records its topics no longer have: \(target.groupID) re-read "
            + "\(list.joined(separator: ", ")) from the start, because its stored positions belonged to another Kafka cluster "
            + "or lay beyond the partition's end (an embedded broker of `backbone dev` starts empty; a topic recreated)"
        if options.dryRun {
            progress.report("history-lost", [("model", .string(target.name)), ("partitions", .int(lost.count))],
                            text: message + "; the differences below include what a rebuild would drop")
            return
        }
        throw CommandError(code: .retentionGap,
                           message: message + "; a rebuild would drop them. Run again with --allow-gaps to rebuild from what the "
                               + "topics hold", context: target.topicList)
    }

    /// Refuses when retention removed records the shadow still needs, naming the partitions
    /// and how many records, unless `--allow-gaps`.
    func checkRetention(_ marks: Watermarks, from next: [KafkaTopicPartition: Int64]) throws {
        let gaps = marks.filter { $0.value.low > (next[$0.key] ?? 0) }.sorted { $0.key < $1.key }
        guard !gaps.isEmpty, !options.allowGaps else { return }
        let list = gaps.map {
            "\($0.key.topic) partition \($0.key.partition) starts at offset \($0.value.low) "
                + "(\($0.value.low - (next[$0.key] ?? 0)) records removed)"
        }
        throw CommandError(code: .retentionGap,
                           message: "retention has removed the oldest records: \(list.joined(separator: ", ")); a rebuild would "
                               + "leave their events out of the model. Raise the topic's retention for the future; run again with "
                               + "--allow-gaps to rebuild from what is left", context: target.topicList)
    }

    /// The live consumer's positions as bounds for the shadow, checked against this cluster.
    func bounds(_ live: [KafkaTopicPartition: ShadowModel.LivePosition], cluster: String?, marks: Watermarks,
                positions: [KafkaTopicPartition: ShadowModel.Position]) throws -> [KafkaTopicPartition: Int64] {
        guard !live.isEmpty else {
            // Without any stored position the swap would put an empty model in place: more
            // likely a group id that is not the service's than a service that never ran.
            throw CommandError(code: .untrustedPosition,
                               message: "the consumer group \(target.groupID) has no stored positions on \(target.topicList); is it "
                                   + "the group \(target.service) runs with? Start \(target.service) once, then rebuild",
                               context: target.topicList)
        }
        var bounds: [KafkaTopicPartition: Int64] = [:]
        for (partition, position) in positions {
            guard let stored = live[partition], stored.next >= 0 else {
                bounds[partition] = position.start  // the live consumer has processed nothing here
                continue
            }
            if let storedCluster = stored.clusterID, let cluster, storedCluster != cluster {
                throw CommandError(code: .untrustedPosition,
                                   message: "the positions of group \(target.group(of: partition.topic)) were stored against another Kafka cluster "
                                       + "(\(storedCluster)); start \(target.service) against this one first (it re-reads the topic), "
                                       + "then rebuild", context: "\(partition.topic)[\(partition.partition)]")
            }
            guard stored.next >= position.start else {
                throw CommandError(code: .untrustedPosition,
                                   message: "\(target.service) is at offset \(stored.next), before the first record left "
                                       + "(\(position.start)); let it catch up, then rebuild",
                                   context: "\(partition.topic)[\(partition.partition)]")
            }
            bounds[partition] = stored.next
        }
        return bounds
    }

    // MARK: - Building

    /// Where the shadow's records come from: the feed, decoded by the service's projection.
    struct Source: Sendable {
        let feed: ShadowFeed
        let applier: any ShadowApplier

        struct Fetched: Sendable {
            var count: Int
            var next: [KafkaTopicPartition: Int64]
            var batch: DecodedBatch
        }

        func fetch(positions: [KafkaTopicPartition: Int64], bounds: [KafkaTopicPartition: Int64], limit: Int, wait: Duration) async throws
            -> Fetched {
            let taken = try await feed.take(positions: positions, bounds: bounds, limit: limit, wait: wait)
            return Fetched(count: taken.records.count, next: taken.next,
                           batch: taken.records.isEmpty ? .empty : applier.decode(taken.records))
        }
    }

    /// Applies the topic to the shadow up to the live consumer's (moving) position. Two
    /// stages overlap, as in the live runner: while one batch is applied (PostgreSQL's work),
    /// the next one is fetched and decoded.
    func chase(_ model: ShadowModel, source: Source, cluster: String?, marks: Watermarks, state: inout RunState) async throws {
        var lastBounds = ContinuousClock.Instant.now - .seconds(1)
        var lastProgress = ContinuousClock.now
        var ready: Source.Fetched?
        let limit = options.batchRecords
        while true {
            try Task.checkCancellation()
            if ready == nil, ContinuousClock.now - lastBounds > .milliseconds(250) {
                state.bounds = try bounds(try await model.livePositions(in: model.connection), cluster: cluster, marks: marks,
                                          positions: state.positions)
                lastBounds = .now
                if state.caughtUp { break }
            }
            let fetched: Source.Fetched
            if let ready { fetched = ready } else {
                fetched = try await source.fetch(positions: state.positions.mapValues(\.next), bounds: state.bounds, limit: limit,
                                                 wait: .milliseconds(100))
            }
            ready = nil
            guard !fetched.next.isEmpty else {
                if ContinuousClock.now - lastProgress > .seconds(30) { throw stalled(state) }
                if source.feed.heldCount >= source.feed.holdLimit {
                    try await Task.sleep(for: .milliseconds(20))  // waiting for the live consumer to move on
                }
                continue
            }
            var after = state.positions.mapValues(\.next)
            after.merge(fetched.next) { $1 }
            let bounds = state.bounds
            let upcoming = Task { try await source.fetch(positions: after, bounds: bounds, limit: limit, wait: .milliseconds(100)) }
            let skipped: Int
            do {
                skipped = try await model.connection.withTransaction { connection in
                    try await model.apply(fetched.batch, advancing: fetched.next, in: connection)
                }
            } catch {
                upcoming.cancel()
                _ = await upcoming.result
                throw error
            }
            commit(fetched, skipped: skipped, state: &state)
            lastProgress = .now
            progress.update(phase: "building", done: state.done, total: state.total)
            let next = try await upcoming.value
            ready = next.next.isEmpty ? nil : next
            if ready == nil, state.caughtUp { lastBounds = .now - .seconds(1) }
        }
        progress.update(phase: "building", done: state.done, total: state.total, force: true)
        progress.endStatus()
    }

    func commit(_ fetched: Source.Fetched, skipped: Int, state: inout RunState) {
        for (partition, next) in fetched.next { state.positions[partition]?.next = next }
        state.applied += fetched.count - skipped
        state.skipped += skipped
    }

    func stalled(_ state: RunState) -> CommandError {
        let short = state.bounds.filter { (state.positions[$0.key]?.next ?? 0) < $0.value }.sorted { $0.key < $1.key }
            .map { "\($0.key.topic) partition \($0.key.partition) at \(state.positions[$0.key]?.next ?? 0) of \($0.value)" }
        return CommandError(code: .timedOut, message: "no records arrived for 30 s while the shadow is short of the live position "
                                + "(\(short.joined(separator: ", "))); is Kafka reachable?", context: target.topicList,
                            isRetriable: true)
    }

    /// Inside the caller's transaction: applies exactly the records up to `state.bounds`.
    func catchUp(_ model: ShadowModel, source: Source, in connection: PostgresConnection, state: inout RunState) async throws {
        var lastProgress = ContinuousClock.now
        while !state.caughtUp {
            try Task.checkCancellation()
            let fetched = try await source.fetch(positions: state.positions.mapValues(\.next), bounds: state.bounds,
                                                 limit: options.batchRecords, wait: .milliseconds(20))
            guard !fetched.next.isEmpty else {
                if ContinuousClock.now - lastProgress > .seconds(30) { throw stalled(state) }
                continue
            }
            let skipped = try await model.apply(fetched.batch, advancing: fetched.next, in: connection)
            commit(fetched, skipped: skipped, state: &state)
            lastProgress = .now
        }
    }

    // MARK: - Finishing

    /// The swap, one transaction: lock the live tables against the live projection's writes
    /// (readers go on), lock the live group's offset rows (`FOR UPDATE`: a live batch now
    /// waits, whether it writes rows or only passes poison records), apply the last records up
    /// to exactly those offsets, then move the relations. The live consumer's stored position
    /// is now the shadow's own, so its next batch — waiting on the locks — goes on into the new
    /// tables from where it was: nothing applied twice, nothing skipped, and no ownership
    /// generation to bump (its claims stay valid).
    func swap(_ model: ShadowModel, source: Source, cluster: String?, marks: Watermarks, state: inout RunState) async throws -> Int {
        let before = state
        let swapStart = ContinuousClock.now
        do {
            state = try await model.connection.withTransaction { connection in
                var inner = before
                try await connection.execute("SET LOCAL lock_timeout = '30s'")
                try await model.lockLiveTables(in: connection)
                inner.bounds = try bounds(try await model.livePositions(in: connection, forUpdate: true), cluster: cluster,
                                          marks: marks, positions: inner.positions)
                try await catchUp(model, source: source, in: connection, state: &inner)
                try await model.carryOver(in: connection)
                try await model.swap(in: connection)
                // The model is now what the topics hold: nothing in it is beyond their reach.
                try await model.clearHistoryLost(in: connection)
                return inner
            }
        } catch {
            state = before  // rolled back: the shadow is where the last committed batch left it
            throw error
        }
        let milliseconds = Int(CommandLoop.seconds(ContinuousClock.now - swapStart) * 1000)
        try await model.dropRetired()
        return milliseconds
    }

    /// `--dry-run`: in one REPEATABLE READ snapshot, the live offsets and the live tables
    /// agree; the shadow is brought to exactly those offsets in it and compared. Nothing live
    /// is locked. The shadow is dropped afterwards.
    func compare(_ model: ShadowModel, source: Source, cluster: String?, marks: Watermarks, state: inout RunState) async throws -> Int32 {
        let before = state
        let rowLimit = options.rowLimit
        let (diff, after) = try await model.connection.withTransaction(isolation: .repeatableRead) { connection in
            var inner = before
            inner.bounds = try bounds(try await model.livePositions(in: connection), cluster: cluster, marks: marks,
                                      positions: inner.positions)
            try await catchUp(model, source: source, in: connection, state: &inner)
            try await model.carryOver(in: connection)
            let diff = try await ModelDiff.compute(tables: target.tables, live: model.live, shadow: model.shadow,
                                                   rowLimit: rowLimit, in: connection)
            return (diff, inner)
        }
        state = after
        try await model.drop()
        show(diff)
        return diff.isEmpty ? 0 : 3
    }

    func show(_ diff: ModelDiff) {
        for table in diff.tables {
            for row in table.rows {
                progress.report("difference", [("table", .string(table.name)), ("change", .string(row.change)), ("key", .json(row.key)),
                                               ("columns", .json(row.columns))],
                                text: "  \(table.name): \(row.change) \(row.key)\(row.change == "changed" ? " \(row.columns)" : "")")
            }
            if table.total > table.rows.count, progress.isTerminal {
                progress.report("more", [], text: "  \(table.name): … \(table.total - table.rows.count) more (--rows N lists more)")
            }
        }
        for table in diff.tables {
            progress.report("table", [("table", .string(table.name)), ("added", .int(table.added)), ("removed", .int(table.removed)),
                                      ("changed", .int(table.changed))],
                            text: "\(table.name): \(table.added) added, \(table.removed) removed, \(table.changed) changed")
        }
        progress.report("summary", [("model", .string(target.name)), ("identical", .bool(diff.isEmpty)),
                                    ("differences", .int(diff.tables.reduce(0) { $0 + $1.total }))],
                        text: diff.isEmpty ? "the live \(target.name) model is exactly what \(target.topicList) say\(target.topics.count == 1 ? "s" : "") it should be"
                                           : "the live \(target.name) model differs from a projection of \(target.topicList) (rows as a rebuild would change them)")
    }

    /// `{"topic":{"partition":offset,…},…}`.
    static func json(_ positions: [KafkaTopicPartition: Int64]) -> String {
        var writer = JSONWriter()
        writer.beginObject()
        for (topic, entries) in Dictionary(grouping: positions, by: \.key.topic).sorted(by: { $0.key < $1.key }) {
            writer.dynamicKey(topic)
            writer.beginObject()
            for (partition, offset) in entries.sorted(by: { $0.key < $1.key }) {
                writer.dynamicKey(String(partition.partition))
                writer.int(Int(offset))
            }
            writer.endObject()
        }
        writer.endObject()
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
