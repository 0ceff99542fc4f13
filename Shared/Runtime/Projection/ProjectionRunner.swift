import Contracts
import Foundation
import Kafka
import Postgres
import PrometheusMetrics
import Lifecycle
import ServiceLogging
import Synchronization

/// Settings of one projection's consumer.
public struct ProjectionRunnerConfiguration: Sendable {
    public var bootstrapServers: String
    public var groupID: String
    public var topics: [String]
    /// Up to this many records per transaction…
    public var maxBatchRecords: Int
    /// …or what arrived within this long.
    public var maxBatchWait: Duration
    /// Attempts of a batch that fails with a non-retriable error before it is split, and
    /// of a single record before it goes to the dead-letter topic.
    public var maxAttempts: Int
    /// How long the group waits for a member that stopped heartbeating (a crashed process)
    /// before its partitions move to the others.
    public var sessionTimeout: Duration
    /// Records the consumer may buffer ahead of the projection (fetching pauses beyond it).
    public var consumerBufferCapacity: Int
    /// Committed batches whose after-commit work may wait behind the running one before
    /// committing pauses (backpressure on a slow publish).
    public var maxPendingAfterCommit: Int = 16
    public var memberID: String
    /// Extra librdkafka consumer properties (a service's come from
    /// `CommonConfiguration.kafkaConsumerProperties`).
    public var consumerProperties: [String: String] = [:]
    /// Told when the runner's group starts, forms and stops (`ServiceContext.consumerGroupObserver`).
    public var groupObserver: (any ConsumerGroupObserver)?
    /// What stored positions are bound to (`CommonConfiguration.kafkaClusterIdentity`), unless a
    /// rule is registered for the cluster (`KafkaClusterIdentity.register`).
    public var clusterIdentity: KafkaClusterIdentity = .clusterID
    /// How often the runner looks for positions an operator moved (`backbone offsets reset`)
    /// in its partitions, and re-reads them from there.
    public var movedPositionsCheckInterval: Duration = .seconds(1)
    /// How long a fetch that found nothing by `maxBatchWait` goes on waiting for the first
    /// record (returned as soon as it arrives): an idle projection wakes at this pace, not
    /// every `maxBatchWait`. The between-batch checks (lag, moved positions, assignment) run
    /// at least this often.
    public var idleBatchWait: Duration = .milliseconds(500)
    /// How long a member may hold no partition while records of its topics wait that no
    /// member of the group is processing (no stored position of the group moved), before
    /// readiness says so and the consumer is replaced (`projection_assignment_stalls_total`).
    /// A consumer that sits unassigned while its partitions are idle is left alone.
    public var assignmentStallLimit: Duration = .seconds(30)
    /// How long a revoke (a rebalance taking partitions away, or a failed consumer's) waits for
    /// the batch in flight before it gives the partitions up anyway; the batch's commit stays
    /// fenced by its claim generation. Keeps a member whose database stopped answering from
    /// holding up the whole group's rebalance.
    public var maxRevokeWait: Duration = .seconds(10)

    public init(bootstrapServers: String, groupID: String, topics: [String], maxBatchRecords: Int = 500,
                maxBatchWait: Duration = .milliseconds(50), maxAttempts: Int = 3, sessionTimeout: Duration = .seconds(10),
                consumerBufferCapacity: Int = 50_000, consumerProperties: [String: String] = [:], memberID: String = "\(ProcessInfo.processInfo.hostName)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))") {
        self.bootstrapServers = bootstrapServers
        self.groupID = groupID
        self.topics = topics
        self.maxBatchRecords = maxBatchRecords
        self.maxBatchWait = maxBatchWait
        self.maxAttempts = maxAttempts
        self.sessionTimeout = sessionTimeout
        self.consumerBufferCapacity = consumerBufferCapacity
        self.consumerProperties = consumerProperties
        self.memberID = memberID
    }
}

/// Runs a `Projection` effectively-once: Kafka consumer group for partition assignment,
/// offsets in Postgres advanced in the same transaction as the read model (with a
/// compare-and-set on the claim generation), poison records to `<topic>.dlq`, transient
/// database errors retried with backoff and never skipped.
public final class ProjectionRunner<P: Projection>: Sendable {
    public let projection: P
    let configuration: ProjectionRunnerConfiguration
    let database: PostgresClient
    let deadLetters: any KafkaRecordSender
    let metrics: MetricsRegistry
    let logger: Logger
    let ownership = PartitionOwnership()
    let offsets: OffsetStore
    /// The client the position checks ask (opened on first use, replaced after a failure).
    let clusterAdmin: ReplaceableKafkaAdmin
    /// Set once `run()` is cancelled: the rebalance listener runs outside the run task (on the
    /// consumer's poll thread), so its retries watch this instead of task cancellation.
    let stopping = Atomic<Bool>(false)
    /// Set in the graceful phase: no batch is fetched after the one in hand.
    let finishing = Atomic<Bool>(false)
    /// The fetch in flight, which the graceful phase cancels: a batch not yet in hand is left for
    /// the next owner (nothing of it is committed), so the runner need not wait out an idle fetch.
    let fetchInFlight = Mutex<Task<FetchedBatch, any Error>?>(nil)
    /// Set while this member holds no partition although records wait that nobody processes
    /// (see `assignmentStallLimit`); cleared once a consumer of the runner is assigned again.
    let assignmentStalled = Atomic<Bool>(false)
    /// Each partition's lag in seconds (`kafka_consumer_lag_seconds`).
    let lagClock = Mutex(ConsumerLagClock())

    public init(projection: P, configuration: ProjectionRunnerConfiguration, database: PostgresClient,
                deadLetters: any KafkaRecordSender, metrics: MetricsRegistry, logger: Logger) {
        self.projection = projection
        self.configuration = configuration
        self.database = database
        self.deadLetters = deadLetters
        self.metrics = metrics
        var logger = logger
        logger[metadataKey: "projection.group"] = configuration.groupID
        self.logger = logger
        self.offsets = OffsetStore(groupID: configuration.groupID, memberID: configuration.memberID)
        self.clusterAdmin = ReplaceableKafkaAdmin(bootstrapServers: configuration.bootstrapServers,
                                                  clientID: "\(configuration.groupID)-positions", timeout: .seconds(5), logger: logger)
        metrics.describe("projection_records_total", type: "counter", help: "Records consumed and committed by a projection.")
        metrics.describe("projection_dead_letters_total", type: "counter", help: "Records sent to a dead-letter topic.")
        metrics.describe("projection_batch_seconds", type: "histogram", help: "Time to apply and commit one batch.")
        metrics.describe("kafka_consumer_lag", type: "gauge", help: "High watermark minus position, per partition: records still to project.")
        metrics.describe("kafka_consumer_lag_seconds", type: "gauge",
                         help: "How far behind in time, per partition: 0 when level, else the time since the later of the last applied record's timestamp and the last moment it was level.")
        metrics.describe("projection_stage_seconds", type: "histogram", help: "Time of one stage of a batch (fetch, decode, apply, commit, after_commit).")
        metrics.describe("client_errors_total", type: "counter",
                         help: "Transient PostgreSQL and Kafka errors a projection retried, by client.")
        metrics.describe("projection_consumer_restarts_total", type: "counter",
                         help: "Consumers replaced after they failed (the projection resumed without a process restart).")
        metrics.describe("projection_offset_resets_total", type: "counter",
                         help: "Stored positions not trusted on assignment (other cluster, beyond or below the watermarks).")
        metrics.describe("projection_records_skipped_total", type: "counter",
                         help: "Records the broker removed (retention) before the projection read them, found as a gap in the offsets while it ran.")
        metrics.describe("projection_assignment_stalls_total", type: "counter",
                         help: "Consumers replaced because they held no partition while records waited that no member processed.")
        // Present from the start, so a rate over them is 0 rather than absent.
        let group = ["group": configuration.groupID]
        for name in ["projection_records_total", "projection_dead_letters_total", "projection_consumer_restarts_total"] {
            metrics.increment(name, by: 0, labels: group)
        }
        for client in ["postgres", "kafka"] { metrics.increment("client_errors_total", by: 0, labels: group.merging(["client": client]) { $1 }) }
    }

    /// Consumes until the task is cancelled, then leaves the group cleanly.
    ///
    /// Three stages overlap: while one batch is applied and committed, the next one is
    /// fetched and decoded, and the after-commit work (notifications) of the batches already
    /// committed runs. Each stage keeps batch order. Batches that commit while after-commit
    /// work is still running are queued and handed over together (`Projection.combine`);
    /// beyond `maxPendingAfterCommit` queued batches, committing waits for it.
    ///
    /// A consumer that fails (the rebalance listener gave up during a long PostgreSQL
    /// outage, the broker reported a fatal error) is closed and replaced after a capped,
    /// cancellable backoff, so the projection resumes by itself once its dependencies are
    /// back; nothing committed is lost and nothing uncommitted is skipped (the new consumer
    /// starts from the stored offsets). Counted in `projection_consumer_restarts_total`.
    ///
    /// In a service group's graceful phase the runner fetches nothing more: it finishes the
    /// batch in hand, publishes what committed batches queued (the after-commit work), leaves
    /// the group and returns.
    public func run() async throws {
        let member = configuration.groupObserver?.memberStarted(ConsumerGroup(groupID: configuration.groupID, topics: configuration.topics))
        defer { if let member { configuration.groupObserver?.memberStopped(member) } }
        try await withGracefulShutdownHandler {
            try await restartingConsumers()
        } onGracefulShutdown: {
            self.finishing.store(true, ordering: .relaxed)
            self.fetchInFlight.withLock { $0 }?.cancel()
        }
    }

    private func restartingConsumers() async throws {
        var delay = Self.restartBackoff.lowerBound
        while !Task.isCancelled && !stopping.load(ordering: .relaxed) && !finishing.load(ordering: .relaxed) {
            let started = ContinuousClock.now
            do {
                try await consume()
                return
            } catch {
                if Task.isCancelled || stopping.load(ordering: .relaxed) || finishing.load(ordering: .relaxed) { return }
                // A consumer that ran a while before failing starts the backoff afresh.
                if ContinuousClock.now - started > .seconds(60) { delay = Self.restartBackoff.lowerBound }
                metrics.increment("projection_consumer_restarts_total", labels: ["group": configuration.groupID])
                logger.error("projection consumer failed; starting a new one", metadata: [
                    "error": "\(error)", "retry.after": "\(delay)"])
                await revoke(Array(ownership.owned.keys))
                let wakeUp = ContinuousClock.now + delay
                while ContinuousClock.now < wakeUp {
                    if Task.isCancelled || stopping.load(ordering: .relaxed) { return }
                    try? await Task.sleep(for: min(.milliseconds(100), wakeUp - .now))
                }
                delay = min(delay * 2, Self.restartBackoff.upperBound)
            }
        }
    }

    /// The wait before a failed consumer is replaced: doubles from the lower bound up to the upper.
    static var restartBackoff: ClosedRange<Duration> { .milliseconds(500) ... .seconds(5) }

    /// One consumer's life: consumes until the task is cancelled (returns) or the consumer fails (throws).
    func consume() async throws {
        let consumerConfiguration = KafkaConsumerConfiguration(
            bootstrapServers: configuration.bootstrapServers, groupID: configuration.groupID, topics: configuration.topics,
            clientID: configuration.groupID, sessionTimeout: configuration.sessionTimeout,
            bufferCapacity: configuration.consumerBufferCapacity, extra: configuration.consumerProperties)
        // Opened off the cooperative pool: librdkafka's constructor can take a second while the broker is down.
        let consumer = try await KafkaClients.open { [self] () throws(KafkaError) in
            try KafkaConsumer(configuration: consumerConfiguration, rebalanceListener: RebalanceBridge(runner: self), logger: logger)
        }
        logger.info("projection started", metadata: ["kafka.topics": configuration.topics.joined(separator: ",")])
        var next = Task { try await fetch(consumer) }
        fetchInFlight.withLock { $0 = next }
        let afterCommit = AfterCommitQueue<P.Effects>()
        var lastLagReport = ContinuousClock.now
        var lastMoveCheck = ContinuousClock.now
        var watch = AssignmentWatch()
        var failure: (any Error)?
        while !Task.isCancelled && !finishing.load(ordering: .relaxed) {
            let batch: FetchedBatch
            do {
                batch = try await withTaskCancellationHandler { try await next.value } onCancel: { [next] in
                    self.stopping.store(true, ordering: .relaxed)
                    next.cancel()
                }
            } catch {
                if !(error is CancellationError) { failure = error }
                break
            }
            // Between batches, with no fetch in flight: records of a moved partition fetched
            // before its seek belong to the old claim and are dropped.
            if ContinuousClock.now - lastMoveCheck >= configuration.movedPositionsCheckInterval {
                lastMoveCheck = .now
                await pickUpMovedPositions(consumer)
            }
            next = Task { try await fetch(consumer) }
            fetchInFlight.withLock { $0 = next }
            if finishing.load(ordering: .relaxed) { next.cancel() }
            if !batch.items.isEmpty, let effects = await process(batch) {
                if afterCommit.pendingCount >= configuration.maxPendingAfterCommit { await afterCommit.drained() }
                afterCommit.submit(effects) { pending in await self.runAfterCommit(self.projection.combine(pending)) }
            }
            if ContinuousClock.now - lastLagReport > .seconds(1) {
                lastLagReport = .now
                reportLag(consumer)
                if let stalled = await watchAssignment(consumer, &watch) {
                    failure = stalled
                    break
                }
            }
        }
        stopping.store(true, ordering: .relaxed)
        next.cancel()
        _ = await next.result
        await afterCommit.drained()
        await consumer.close()
        if let failure {
            // The stop above only ended this consumer's retries; the runner goes on.
            if !Task.isCancelled { stopping.store(false, ordering: .relaxed) }
            throw failure
        }
        logger.info("projection stopped")
    }

    func reportLag(_ consumer: KafkaConsumer) {
        let now = Date()
        for (tp, lag) in consumer.lag() {
            let labels = ["group": configuration.groupID, "topic": tp.topic, "partition": String(tp.partition)]
            metrics.set("kafka_consumer_lag", Double(lag), labels: labels)
            metrics.set("kafka_consumer_lag_seconds", lagClock.withLock { $0.seconds(tp, records: lag, now: now) }, labels: labels)
        }
    }

    /// Whether this member holds no partition although records of its topics wait that no
    /// member processes, for longer than `assignmentStallLimit` (readiness says not ready).
    public var isAssignmentStalled: Bool { assignmentStalled.load(ordering: .relaxed) }

    /// When the consumer last held a partition, and when the group's progress was last checked.
    struct AssignmentWatch {
        var unassignedSince: ContinuousClock.Instant?
        var lastCheck: ContinuousClock.Instant?
    }

    /// The consumer was assigned nothing for `assignmentStallLimit` while its topics hold
    /// records beyond the group's stored positions and none of those positions moved.
    struct AssignmentStalled: Error, CustomStringConvertible {
        var unassignedFor: Duration
        var waitingRecords: Int64
        var description: String {
            "no partition assigned for \(unassignedFor) while \(waitingRecords) record(s) wait that no member of the group processes"
        }
    }

    /// Belt and braces for a member the group never gives partitions to (a coordinator that
    /// dropped it without telling it): checked every second, asks the database and the
    /// cluster at most every 5 s once the limit passed. The check failing (a dependency down)
    /// says nothing: readiness already reports that outage.
    func watchAssignment(_ consumer: KafkaConsumer, _ watch: inout AssignmentWatch) async -> AssignmentStalled? {
        let now = ContinuousClock.now
        guard consumer.assignment().isEmpty else {
            watch = AssignmentWatch()
            assignmentStalled.store(false, ordering: .relaxed)
            return nil
        }
        let since = watch.unassignedSince ?? now
        watch.unassignedSince = since
        guard now - since >= configuration.assignmentStallLimit, watch.lastCheck.map({ now - $0 >= .seconds(5) }) ?? true else { return nil }
        watch.lastCheck = now
        guard let waiting = try? await recordsNobodyProcesses(within: now - since), waiting > 0 else { return nil }
        let stalled = AssignmentStalled(unassignedFor: now - since, waitingRecords: waiting)
        assignmentStalled.store(true, ordering: .relaxed)
        metrics.increment("projection_assignment_stalls_total", labels: ["group": configuration.groupID])
        logger.error("projection consumer holds no partition while records wait; replacing it", metadata: [
            "unassigned.for": "\(stalled.unassignedFor)", "records.waiting": "\(waiting)"])
        return stalled
    }

    /// Records of the runner's topics beyond the group's stored positions, or 0 when one of
    /// those positions moved (claimed or committed) within `window`: then a member works.
    func recordsNobodyProcesses(within window: Duration) async throws -> Int64 {
        let rows = try await database.query("""
            SELECT topic, partition, next_offset, updated_at > now() - ($3::bigint * interval '1 millisecond') AS recent
            FROM consumer_offsets WHERE group_id = $1 AND topic = ANY($2::text[])
            """, [configuration.groupID, configuration.topics,
                 window.wholeMilliseconds])
        var stored: [KafkaTopicPartition: Int64] = [:]
        for row in rows {
            if try row.decode(Bool.self, "recent") { return 0 }
            stored[KafkaTopicPartition(topic: try row.decode(String.self, "topic"), partition: try row.decode(Int32.self, "partition"))]
                = try row.decode(Int64.self, "next_offset")
        }
        let admin = try await clusterAdmin.admin()
        var waiting: Int64 = 0
        for topic in try await admin.listTopics() where configuration.topics.contains(topic.name) {
            for partition in topic.partitions {
                let marks = try await admin.watermarks(topic: topic.name, partition: partition)
                let next = stored[KafkaTopicPartition(topic: topic.name, partition: partition)] ?? -1
                waiting += max(0, marks.high - max(next, marks.low))
            }
        }
        return waiting
    }

    /// Everything this member has committed, per partition (tests and diagnostics).
    public var committedPositions: [KafkaTopicPartition: Int64] {
        ownership.owned.mapValues(\.nextOffset)
    }

    // MARK: - Rebalance

    func partitionsAssigned(_ partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64] {
        let stored = try await withRetries("claim partitions") { try await self.offsets.claim(partitions, client: self.database) }
        let claims = try await withRetries("check stored positions") {
            do {
                return try await self.checked(stored)
            } catch {
                // A client that lived through a broker outage can keep timing out: retry on a new one.
                self.clusterAdmin.replace()
                throw error
            }
        }
        ownership.assign(claims)
        configuration.groupObserver?.groupAssigned(configuration.groupID)
        logger.info("partitions assigned", metadata: ["kafka.partitions": Self.describe(claims.mapValues(\.nextOffset))])
        return claims.compactMapValues { $0.nextOffset >= 0 ? $0.nextOffset : nil }
    }

    /// Checks each claimed position against the cluster and the partition's watermarks
    /// (see `OffsetStore.check`); a position that cannot be trusted is replaced, logged once
    /// with the numbers and counted in `projection_offset_resets_total{reason}`.
    func checked(_ stored: [KafkaTopicPartition: OffsetStore.StoredClaim]) async throws -> [KafkaTopicPartition: PartitionOwnership.Claim] {
        let admin = try await clusterAdmin.admin()
        let cluster = configuration.clusterIdentity.resolved(for: configuration.bootstrapServers)
            .identity(of: try await admin.clusterID(), bootstrapServers: configuration.bootstrapServers)
        var claims: [KafkaTopicPartition: PartitionOwnership.Claim] = [:]
        for (tp, entry) in stored {
            let marks = try await admin.watermarks(topic: tp.topic, partition: tp.partition)
            let checked = OffsetStore.check(stored: entry, currentCluster: cluster, low: marks.low, high: marks.high)
            var claim = entry.claim
            if checked.nextOffset != claim.nextOffset || entry.clusterID != cluster {
                // Records were applied from a partition that no longer has them.
                let historyLost = entry.claim.nextOffset > 0 && (checked.reset == .otherCluster || checked.reset == .beyondHighWatermark)
                try await offsets.rebind(tp, generation: claim.generation, nextOffset: checked.nextOffset, clusterID: cluster,
                                         historyLost: historyLost, client: database)
                claim.nextOffset = checked.nextOffset
            }
            if let reset = checked.reset {
                logger.warning("stored position not trusted; partition re-read from \(checked.nextOffset < 0 ? "its earliest offset" : "the low watermark")",
                               metadata: ["kafka.topic": "\(tp.topic)", "kafka.partition": "\(tp.partition)",
                                          "offsets.stored": "\(entry.claim.nextOffset)", "offsets.low": "\(marks.low)",
                                          "offsets.high": "\(marks.high)", "offsets.reason": "\(reset.rawValue)",
                                          "kafka.cluster.stored": "\(entry.clusterID ?? "unknown")",
                                          "kafka.cluster": "\(cluster ?? "unknown")"])
                metrics.increment("projection_offset_resets_total", labels: ["group": configuration.groupID, "reason": reset.rawValue])
            }
            claims[tp] = claim
        }
        return claims
    }

    /// Takes over the assigned partitions whose stored position an operator moved: claims
    /// them back (a new generation, so anything fetched under the old one is dropped), checks
    /// the new position like an assignment does, and seeks the consumer there.
    func pickUpMovedPositions(_ consumer: KafkaConsumer) async {
        let assigned = consumer.assignment()
        guard !assigned.isEmpty else { return }
        var taken: [KafkaTopicPartition: PartitionOwnership.Claim] = [:]
        do {
            let stored = try await offsets.reclaimMoved(assigned, client: database)
            guard !stored.isEmpty else { return }
            taken = stored.mapValues(\.claim)
            let claims = try await checked(stored)
            taken = claims
            try await consumer.seek(claims.mapValues(\.nextOffset))
            ownership.assign(claims)
            logger.notice("stored positions moved by an operator; partitions re-read from there",
                          metadata: ["kafka.partitions": "\(Self.describe(claims.mapValues(\.nextOffset)))"])
        } catch {
            logger.warning("taking over moved positions failed; retrying", metadata: ["error": "\(error)"])
            try? await offsets.releaseMoved(taken, client: database)
        }
    }

    func partitionsRevoked(_ partitions: [KafkaTopicPartition]) async {
        await revoke(partitions)
        logger.info("partitions revoked", metadata: ["kafka.partitions": partitions.map { "\($0.topic)/\($0.partition)" }.joined(separator: ",")])
    }

    /// Gives partitions up once the batch in flight ended, or after `maxRevokeWait`.
    func revoke(_ partitions: [KafkaTopicPartition]) async {
        guard await !ownership.revoke(partitions, waitingAtMost: configuration.maxRevokeWait) else { return }
        logger.warning("the batch in flight outlived the revoke's wait; its partitions are given up, and its commit is refused "
                       + "if another member claims them first", metadata: [
                           "kafka.partitions": partitions.map { "\($0.topic)/\($0.partition)" }.joined(separator: ","),
                           "revoke.wait": "\(configuration.maxRevokeWait)"])
    }

    static func describe(_ offsets: [KafkaTopicPartition: Int64]) -> String {
        offsets.sorted { ($0.key.topic, $0.key.partition) < ($1.key.topic, $1.key.partition) }
            .map { "\($0.key.topic)/\($0.key.partition)@\($0.value)" }.joined(separator: ",")
    }

    // MARK: - Retries

    /// Retries retriable failures (lost connections, serialization failures, Kafka
    /// unavailable) with capped exponential backoff until they succeed, the task is cancelled
    /// or the runner stops (the rebalance listener runs outside the run task, so a stop ends
    /// its retries within 100 ms).
    func withRetries<T: Sendable>(_ what: String, _ body: @Sendable () async throws -> T) async throws -> T {
        var delay = Duration.milliseconds(100)
        while true {
            do {
                return try await body()
            } catch let error where Self.isRetriable(error) {
                logger.warning("retrying after a transient error", metadata: ["operation": what, "error": "\(error)"])
                metrics.increment("client_errors_total", labels: ["group": configuration.groupID,
                                                                  "client": error is PostgresError ? "postgres" : "kafka"])
                let wakeUp = ContinuousClock.now + delay
                repeat {
                    if Task.isCancelled || stopping.load(ordering: .relaxed) { throw CancellationError() }
                    try await Task.sleep(for: min(.milliseconds(100), wakeUp - .now))
                } while ContinuousClock.now < wakeUp
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    static func isRetriable(_ error: any Error) -> Bool {
        if let error = error as? PostgresError { return error.isRetriable }
        if let error = error as? KafkaError { return error.isRetriable || error.code == .messageTimedOut || error.code == .brokerUnavailable }
        return false
    }
}

/// Adapts the runner to the consumer's rebalance protocol.
struct RebalanceBridge<P: Projection>: KafkaRebalanceListener {
    let runner: ProjectionRunner<P>

    func partitionsAssigned(_ partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64] {
        try await runner.partitionsAssigned(partitions)
    }

    func partitionsRevoked(_ partitions: [KafkaTopicPartition]) async {
        await runner.partitionsRevoked(partitions)
    }
}
