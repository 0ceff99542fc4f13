import DevInfrastructure
import Kafka
import Lifecycle
import Postgres
import Projection
import ServiceLogging
import ServiceRuntime
import Synchronization

/// What `backbone dev` keeps of its embedded broker, which holds records in memory only: a
/// copy of every record the stack's services produce (`dev_broker_journal`, in PostgreSQL),
/// written before the producer reports the record delivered — so before ingest answers
/// `accepted`, before an outbox row is deleted, before upload-complete answers 202.
///
/// A copy is dropped once every consumer group of the stack that reads its topic stored a
/// position past it (`prune(consuming:)`, every `pruneInterval` and once more at shutdown,
/// after the drain). What is left when a run ends without draining (`kill -9`) is what its
/// consumers had not processed: the next start publishes it to the new broker, in the order
/// its partitions held it, before any consumer starts (`republish(from:currentCluster:through:)`).
/// A consumer that had processed one of those records skips it as it skips any redelivery (the
/// event logs, the intake's job rows, the erased-users lists). Records of topics that no consumer of the
/// stack reads (the dead-letter topics) are kept and published to each new broker, until
/// `backbone dlq replay` replays them.
///
/// The embedded broker keeps the last `brokerPartitionBytes` of each partition and drops the
/// oldest records beyond it, processed or not; a consumer that fell further behind would resume
/// past records it never processed, and the pruning would then drop their copies too. So the
/// journal also admits records to the broker (`admit(_:)`): while a topic some group of the stack
/// reads holds `backlogLimit` unprocessed bytes in one partition (counting what is in flight to
/// it), a send waits for the consumers, and after `admissionWait` fails unsent — ingest answers
/// 503 with `Retry-After`, an outbox keeps its row.
///
/// The operator commands that produce (`backbone republish`, `backbone dlq replay`) run as
/// processes of their own: against a broker the stack registered (`register()`), they produce
/// through a journal of that stack's table too (`attach(brokers:database:logger:)`), admitted by
/// the same room, which they measure from the readers the stack registered.
///
/// Headers are not part of the copy (no producer of the system sets any).
final class DevBrokerJournal: Sendable {
    /// A record the broker acknowledged, with where it was stored.
    struct Delivery: Sendable {
        var record: KafkaProducerRecord
        var report: KafkaDeliveryReport
    }

    static let pruneInterval = Duration.milliseconds(500)
    /// The pruning's interval while a partition is past half of `backlogLimit`, so that room
    /// made by the consumers reaches waiting sends soon.
    static let busyPruneInterval = Duration.milliseconds(100)
    /// What the embedded broker (librdkafka's mock cluster) keeps of a partition.
    static let brokerPartitionBytes = 5 * 1024 * 1024
    /// The unprocessed bytes a partition may hold (the estimate of `bytes(_:)`), with room
    /// under `brokerPartitionBytes` for the batches' own headers.
    static let backlogLimit = 3 * 1024 * 1024
    /// The first pass waits this long: every projection of the stack has registered by then
    /// (each does at the start of its run, and none processes anything before its group has
    /// formed, ~3 s), so no copy is dropped for want of a reader not yet listed.
    static let firstPruneAfter = Duration.seconds(5)

    let database: PostgresClient
    /// The identity of this run's broker (`EmbeddedKafkaCluster.identity`), as the consumers
    /// store their positions against it.
    let cluster: String
    /// How long a send waits for room before it fails.
    let admissionWait: Duration
    private let inserts: Coalescer<Delivery, Void>
    private let room = Mutex(Room())
    /// The pruning of an attached journal (`attach`), which runs in the producer's process.
    private let guestPruning = Mutex<Task<Void, Never>?>(nil)

    /// What the broker holds unprocessed, as far as the journal knows it.
    private struct Room {
        /// Bytes kept and not processed by every group reading the topic, per topic and partition
        /// (measured by each prune pass, plus what was kept since).
        var backlog: [String: [Int32: Int]] = [:]
        /// What was kept while a prune pass measured (added to its figures, which may not see it).
        var keptDuringMeasure: [String: [Int32: Int]]?
        /// Bytes admitted and not yet settled, per topic (the partition is the partitioner's choice).
        var inFlight: [String: Int] = [:]
        /// The topics some group of the stack reads, as of the last pass; only those are admitted
        /// by room. Before the first pass (the projections are still registering): every topic
        /// but the dead letters'.
        var readTopics: Set<String>?

        func fits(_ topic: String, adding bytes: Int) -> Bool {
            guard readTopics?.contains(topic) ?? !topic.hasSuffix(".dlq") else { return true }
            let held = (backlog[topic]?.values.max() ?? 0) + inFlight[topic, default: 0]
            return held == 0 || held + bytes <= DevBrokerJournal.backlogLimit
        }

        var isBusy: Bool {
            backlog.values.contains { $0.values.contains { $0 > DevBrokerJournal.backlogLimit / 2 } }
        }
    }

    /// - Parameter database: a client of its own (the services' pool is theirs), closed by the caller.
    init(database: PostgresClient, cluster: String, admissionWait: Duration = .seconds(5)) {
        self.database = database
        self.cluster = cluster
        self.admissionWait = admissionWait
        inserts = Coalescer(concurrentRuns: 2) { deliveries in
            var rows = PostgresCopyRows(reservingBytes: deliveries.count * 600)
            for delivery in deliveries {
                rows.append(cluster)
                rows.append(delivery.report.topic)
                rows.append(Int32(delivery.report.partition))
                rows.append(delivery.report.offset)
                rows.append(bindable: delivery.record.key)
                rows.append(bindable: delivery.record.value)
                rows.append(delivery.record.headers.trace?.traceparent)
                rows.endRow()
            }
            _ = try await database.withConnection { connection in
                try await connection.copy(into: "dev_broker_journal",
                                          columns: ["cluster_id", "topic", "partition", "offset", "key", "value", "traceparent"],
                                          rows: rows)
            }
        }
    }

    /// The identity the consumers store their positions against for the broker at `brokers`
    /// (nil when it reports no cluster id: the journal then cannot match positions to copies).
    static func clusterIdentity(brokers: String, logger: Logger) async throws -> String? {
        let admin = try KafkaAdmin(bootstrapServers: brokers, clientID: "backbone-dev-journal", timeout: .seconds(3), logger: logger)
        return EmbeddedKafkaCluster.identity(reportedID: try await admin.clusterID(), bootstrapServers: brokers)
    }

    /// Creates the journal's tables (the dev stack's own; no service reads them).
    static func prepare(_ database: PostgresClient) async throws {
        try await database.withConnection { connection in try await connection.runScript("""
            -- The brokers of dev stacks whose records are journaled, and the consumer groups
            -- of each stack and the topics they read: what a producer of another process
            -- (an operator command) needs to journal its records and measure the room.
            CREATE TABLE IF NOT EXISTS dev_broker_journal_brokers (
                cluster_id text PRIMARY KEY,
                registered_at timestamptz NOT NULL DEFAULT now());
            CREATE TABLE IF NOT EXISTS dev_broker_journal_readers (
                cluster_id text NOT NULL,
                group_id text NOT NULL,
                topic text NOT NULL,
                PRIMARY KEY (cluster_id, group_id, topic));
            CREATE TABLE IF NOT EXISTS dev_broker_journal (
                cluster_id text NOT NULL,
                topic text NOT NULL,
                partition integer NOT NULL,
                "offset" bigint NOT NULL,
                key bytea,
                value bytea NOT NULL,
                kept_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (cluster_id, topic, partition, "offset"));
            -- The record's trace (its traceparent header), sent again with it.
            ALTER TABLE dev_broker_journal ADD COLUMN IF NOT EXISTS traceparent text;
            -- The eventId of a copy's JSON value (lower case), NULL for a value that is not such JSON.
            CREATE OR REPLACE FUNCTION dev_broker_journal_event_id(value bytea) RETURNS text
            LANGUAGE plpgsql IMMUTABLE AS $$
            BEGIN
                RETURN lower(convert_from(value, 'UTF8')::jsonb ->> 'eventId');
            EXCEPTION WHEN others THEN
                RETURN NULL;
            END $$;
            """) }
    }

    /// Registers this run's broker as journaled, so that the operator commands producing to it
    /// journal their records too; forgets the brokers of earlier runs whose copies are all gone
    /// (call it after `DevRecovery` republished them).
    func register() async throws {
        _ = try await database.query("""
            WITH gone AS (
                DELETE FROM dev_broker_journal_brokers b
                WHERE b.cluster_id <> $1 AND NOT EXISTS (SELECT 1 FROM dev_broker_journal j WHERE j.cluster_id = b.cluster_id)
                RETURNING b.cluster_id),
            readers AS (DELETE FROM dev_broker_journal_readers r USING gone g WHERE r.cluster_id = g.cluster_id)
            INSERT INTO dev_broker_journal_brokers (cluster_id) VALUES ($1) ON CONFLICT DO NOTHING
            """, [cluster])
    }

    /// A journal for a producer of another process to the broker at `brokers`, when `database`
    /// holds the journal of a running `backbone dev` whose broker that is (`register()`); nil
    /// otherwise (a broker of another kind, a database without the journal). Sends wait up to
    /// `admissionWait` for room. Its pruning runs until `detach()`.
    static func attach(brokers: String, database: PostgresClient, admissionWait: Duration = .seconds(30),
                       logger: Logger) async throws -> DevBrokerJournal? {
        guard let cluster = try await clusterIdentity(brokers: brokers, logger: logger) else { return nil }
        let registration: PostgresRows
        do {
            registration = try await database.query("SELECT 1 FROM dev_broker_journal_brokers WHERE cluster_id = $1", [cluster])
        } catch {
            // No dev stack ever ran on this database.
            if error.sqlState == "42P01" { return nil }
            throw error
        }
        guard !registration.isEmpty else { return nil }
        let journal = DevBrokerJournal(database: database, cluster: cluster, admissionWait: admissionWait)
        // The room before the first send, then measured while the process produces.
        try await journal.prune(consuming: try await journal.registeredReaders())
        journal.guestPruning.withLock { $0 = Task { await journal.pruneUntilCancelled(readers: journal.registeredReaders, logger: logger) } }
        return journal
    }

    /// Stops an attached journal's pruning, after one last pass.
    func detach() async {
        let pruning = guestPruning.withLock { task in defer { task = nil }; return task }
        pruning?.cancel()
        await pruning?.value
    }

    /// The consumer groups the stack of this broker registered and the topics they read.
    func registeredReaders() async throws -> [ConsumerGroup] {
        try await database.query("SELECT group_id, topic FROM dev_broker_journal_readers WHERE cluster_id = $1", [cluster]).map { row in
            ConsumerGroup(groupID: try row.decode(String.self, "group_id"), topics: [try row.decode(String.self, "topic")])
        }
    }

    /// An upper bound of a record's own framing in the broker's log (its batch's header is
    /// covered by `backlogLimit`'s margin).
    static let recordFraming = 32

    /// The bytes `record` takes in the broker's log, near enough: key, value and framing.
    static func bytes(_ record: KafkaProducerRecord) -> Int { record.value.count + (record.key?.count ?? 0) + recordFraming }

    /// `bytes(_:)` of `records`, summed per topic.
    static func bytesByTopic(_ records: some Sequence<KafkaProducerRecord>) -> [String: Int] {
        var bytes: [String: Int] = [:]
        for record in records { bytes[record.topic, default: 0] += Self.bytes(record) }
        return bytes
    }

    /// Returns once the broker has room for `records` (so that no record it holds unprocessed is
    /// dropped to make room); every call that returns is followed by one `settle(_:)` of them.
    func admit(_ records: [KafkaProducerRecord]) async throws {
        let bytes = Self.bytesByTopic(records)
        let deadline = ContinuousClock.now + admissionWait
        while true {
            let admitted = room.withLock { room in
                guard bytes.allSatisfy({ room.fits($0.key, adding: $0.value) }) else { return false }
                for (topic, count) in bytes { room.inFlight[topic, default: 0] += count }
                return true
            }
            if admitted { return }
            guard ContinuousClock.now < deadline, !Task.isCancelled else {
                let topics = bytes.keys.sorted().joined(separator: ", ")
                throw KafkaError(code: .backlogFull, message: """
                    the embedded broker holds as much of \(topics) as it keeps without dropping records not yet processed; \
                    the consumers did not catch up within \(admissionWait)
                    """, isRetriable: true)
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Keeps `deliveries` (acknowledged records, in send order).
    func keep(_ deliveries: [Delivery]) async throws {
        try await inserts.run(deliveries)
        var kept: [KafkaTopicPartition: Int] = [:]
        for delivery in deliveries {
            kept[KafkaTopicPartition(topic: delivery.report.topic, partition: delivery.report.partition), default: 0] += Self.bytes(delivery.record)
        }
        room.withLock { room in
            for (tp, bytes) in kept {
                room.backlog[tp.topic, default: [:]][tp.partition, default: 0] += bytes
                room.keptDuringMeasure?[tp.topic, default: [:]][tp.partition, default: 0] += bytes
            }
        }
    }

    /// `records`, admitted earlier, were delivered and kept, or failed.
    func settle(_ records: [KafkaProducerRecord]) {
        let bytes = Self.bytesByTopic(records)
        room.withLock { room in
            for (topic, count) in bytes { room.inFlight[topic, default: 0] -= count }
        }
    }

    /// Drops the copies that every group in `groups` reading their topic has processed
    /// (stored a position past, against this run's broker), and those of dead letters that
    /// `backbone dlq replay` replayed from this broker; returns how many. Measures what is
    /// left unprocessed of the topics `groups` read, for `admit(_:)`, and registers `groups`
    /// as readers of this broker (`registeredReaders()`).
    @discardableResult
    func prune(consuming groups: [ConsumerGroup]) async throws -> Int {
        let pairs = groups.flatMap { group in group.topics.map { (group.groupID, $0) } }
        room.withLock { $0.keptDuringMeasure = [:] }
        let rows: PostgresRows
        do {
            rows = try await database.query("""
            WITH consumers AS (SELECT DISTINCT * FROM unnest($2::text[], $3::text[]) AS c (group_id, topic)),
            registered AS (
                INSERT INTO dev_broker_journal_readers (cluster_id, group_id, topic) SELECT $1, group_id, topic FROM consumers
                ON CONFLICT DO NOTHING),
            readers AS (SELECT topic, count(*) AS groups FROM consumers GROUP BY topic),
            processed AS (
                SELECT c.topic, o.partition, min(o.next_offset) AS next_offset, count(*) AS groups
                FROM consumers c
                JOIN consumer_offsets o ON o.group_id = c.group_id AND o.topic = c.topic AND o.cluster_id = $1
                GROUP BY c.topic, o.partition),
            pruned AS (
                DELETE FROM dev_broker_journal j USING processed p, readers r
                WHERE j.cluster_id = $1 AND j.topic = p.topic AND j.partition = p.partition AND j."offset" < p.next_offset
                  AND r.topic = p.topic AND p.groups = r.groups
                RETURNING 1),
            replayed AS (
                DELETE FROM dev_broker_journal j USING dead_letter_replays d
                WHERE j.cluster_id = $1 AND d.cluster_id = $1 AND d.dlq_topic = j.topic AND d.dlq_partition = j.partition
                  AND d.dlq_offset = j."offset"
                RETURNING 1),
            -- What the pruning leaves of the read topics (the statement's snapshot still holds
            -- the rows it deletes, so those are left out here).
            backlog AS (
                SELECT j.topic, j.partition, sum(octet_length(j.value) + COALESCE(octet_length(j.key), 0) + \(Self.recordFraming))::bigint AS bytes
                FROM dev_broker_journal j
                JOIN readers r ON r.topic = j.topic
                LEFT JOIN processed p ON p.topic = j.topic AND p.partition = j.partition AND p.groups = r.groups
                WHERE j.cluster_id = $1 AND (p.next_offset IS NULL OR j."offset" >= p.next_offset)
                GROUP BY j.topic, j.partition)
            SELECT NULL AS topic, NULL::int AS partition, NULL::bigint AS bytes,
                   (SELECT count(*) FROM pruned) + (SELECT count(*) FROM replayed) AS pruned
            UNION ALL
            SELECT topic, partition, bytes, NULL FROM backlog
            """, [cluster, pairs.map(\.0), pairs.map(\.1)])
        } catch {
            room.withLock { $0.keptDuringMeasure = nil }
            throw error
        }
        var pruned = 0
        var backlog: [String: [Int32: Int]] = [:]
        for row in rows {
            if let topic = try row.decode(String?.self, "topic") {
                backlog[topic, default: [:]][Int32(try row.decode(Int.self, "partition"))] = try row.decode(Int.self, "bytes")
            } else {
                pruned = try row.decode(Int.self, "pruned")
            }
        }
        room.withLock { room in
            for (topic, partitions) in room.keptDuringMeasure ?? [:] {
                for (partition, bytes) in partitions { backlog[topic, default: [:]][partition, default: 0] += bytes }
            }
            room.backlog = backlog
            room.keptDuringMeasure = nil
            room.readTopics = Set(pairs.map(\.1))
        }
        return pruned
    }

    /// Publishes every copy an earlier run left (another broker's) through `producer`, in the
    /// order that run's broker held them, each to the partition it was in; drops each once this
    /// broker acknowledged it (through a journaled producer, its new copy replaces it).
    /// Returns how many records each topic got back.
    static func republish(from database: PostgresClient, currentCluster: String,
                          through producer: any KafkaRecordSender) async throws -> [String: Int] {
        var published: [String: Int] = [:]
        // Earlier brokers oldest first (more than one only after a start that could not finish
        // this); each one's records in its partitions' order.
        let earlier = try await database.query("""
            SELECT cluster_id FROM dev_broker_journal WHERE cluster_id <> $1 GROUP BY cluster_id ORDER BY min(kept_at)
            """, [currentCluster]).map { try $0.decode(String.self, "cluster_id") }
        for cluster in earlier {
            try await republish(cluster, from: database, through: producer, counting: &published)
        }
        return published
    }

    private static func republish(_ cluster: String, from database: PostgresClient, through producer: any KafkaRecordSender,
                                  counting published: inout [String: Int]) async throws {
        while true {
            let rows = try await database.query("""
                SELECT cluster_id, topic, partition, "offset", key, value, traceparent FROM dev_broker_journal
                WHERE cluster_id = $1 ORDER BY topic, partition, "offset" LIMIT 1000
                """, [cluster])
            guard !rows.isEmpty else { return }
            var records: [KafkaProducerRecord] = []
            var keys: (clusters: [String], topics: [String], partitions: [Int], offsets: [Int64]) = ([], [], [], [])
            for row in rows {
                let topic = try row.decode(String.self, "topic")
                let partition = try row.decode(Int.self, "partition")
                let trace = try row.decode(String?.self, "traceparent").flatMap(TraceContext.init(traceparent:))
                records.append(KafkaProducerRecord(topic: topic, partition: Int32(partition), key: try row.decode([UInt8]?.self, "key"),
                                                   value: try row.decode([UInt8].self, "value"), headers: trace.map { [.trace($0)] } ?? []))
                keys.clusters.append(try row.decode(String.self, "cluster_id"))
                keys.topics.append(topic)
                keys.partitions.append(partition)
                keys.offsets.append(try row.decode(Int64.self, "offset"))
            }
            for (index, result) in await producer.send(records).enumerated() {
                if case .failure(let error) = result { throw error }
                published[records[index].topic, default: 0] += 1
            }
            _ = try await database.query("""
                DELETE FROM dev_broker_journal j USING unnest($1::text[], $2::text[], $3::int[], $4::bigint[]) AS k (c, t, p, o)
                WHERE j.cluster_id = k.c AND j.topic = k.t AND j.partition = k.p AND j."offset" = k.o
                """, [keys.clusters, keys.topics, keys.partitions, keys.offsets])
        }
    }

    /// The loop that prunes while the stack runs (from `firstPruneAfter` on), and once more when
    /// it stops (after the drain, which is stopped before it).
    func pruner(readers: RunningConsumerGroups, logger: Logger) -> any Service {
        ClosureService(name: "dev-broker-journal") { [self] in
            try? await Task.sleep(for: Self.firstPruneAfter)
            await pruneUntilCancelled(readers: { readers.groups }, logger: logger)
        }
    }

    /// Prunes (`prune(consuming:)` of `readers`) every `pruneInterval` (`busyPruneInterval`
    /// while a partition is past half the room) until cancelled, then once more.
    private func pruneUntilCancelled(readers: @escaping @Sendable () async throws -> [ConsumerGroup],
                                     logger: Logger) async {
        while !Task.isCancelled {
            do { try await prune(consuming: try await readers()) } catch {
                logger.warning("could not prune the broker journal; will retry", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: room.withLock(\.isBusy) ? Self.busyPruneInterval : Self.pruneInterval)
        }
        // The last pass must not see the shutdown's cancellation.
        await Task {
            do { try await prune(consuming: try await readers()) } catch {
                logger.warning("could not prune the broker journal at exit", metadata: ["error": "\(error)"])
            }
        }.value
    }
}
