import Foundation
import Kafka
import Postgres
import ServiceLogging

/// The shadow copy of a read model: the service's own tables, created by the service's own
/// migrations in a schema of their own (`rebuild_<model>`), written by the service's own
/// projection on one dedicated connection whose search path is that schema alone — so a
/// statement of the projection can only ever reach the shadow, never a live table.
///
/// The schema also holds the rebuild's own position per partition of each of the model's
/// topics, advanced in the same
/// transaction as the rows it produced: an interrupted rebuild (Ctrl-C, kill -9) resumes
/// exactly where its last transaction ended. The connection holds an advisory lock for the
/// whole run, so two rebuilds of one model never interleave.
final class ShadowModel {
    /// Where a partition's shadow started (0, or the low watermark with `--allow-gaps`) and
    /// the next offset it will apply.
    struct Position: Sendable, Equatable {
        var start: Int64
        var next: Int64
    }

    /// A live consumer position as stored in `consumer_offsets` (-1: nothing processed).
    struct LivePosition: Sendable {
        var next: Int64
        var clusterID: String?
        /// When the live consumer re-read the partition from the start, the records it had
        /// applied being gone from it (`consumer_offsets.history_lost_at`).
        var historyLostAt: Date? = nil
    }

    let target: RebuildTarget
    let connection: PostgresConnection
    /// The schema holding the live tables (what the services' search path finds).
    let liveSchema: String
    /// The schema holding `consumer_offsets`.
    let offsetsSchema: String

    private init(target: RebuildTarget, connection: PostgresConnection, liveSchema: String, offsetsSchema: String) {
        self.target = target
        self.connection = connection
        self.liveSchema = liveSchema
        self.offsetsSchema = offsetsSchema
    }

    var shadow: String { Self.quote(target.shadowSchema) }
    var live: String { Self.quote(liveSchema) }

    /// Connects, finds the live tables, takes the model's rebuild lock and points the search
    /// path at the shadow schema.
    static func open(target: RebuildTarget, url: String, logger: Logger) async throws -> ShadowModel {
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(
                configuration: PostgresConfiguration(url: url, applicationName: "backbone-rebuild-\(target.name)"), logger: logger)
        } catch {
            throw CommandError(code: .databaseUnavailable, message: "cannot connect to PostgreSQL: \(error)",
                               context: PostgresConfiguration(url: url).redactedURL, isRetriable: true)
        }
        do {
            guard let liveSchema = try await schema(of: target.tables[0], connection),
                  let offsetsSchema = try await schema(of: "consumer_offsets", connection) else {
                throw CommandError(code: .notMigrated,
                                   message: "the \(target.name) read model's tables do not exist in this database; "
                                       + "run `backbone migrate` (or start \(target.service)) first")
            }
            let locked = try await connection.query("SELECT pg_try_advisory_lock(hashtext($1)) AS locked", [lockName(target)])
            guard try locked.first?.decode(Bool.self, "locked") == true else {
                throw CommandError(code: .rebuildRunning,
                                   message: "another `backbone rebuild \(target.name)` is running on this database; "
                                       + "wait for it to finish (or stop it with Ctrl-C), then run this again")
            }
            try await connection.execute("SET search_path TO \(quote(target.shadowSchema))")
            return ShadowModel(target: target, connection: connection, liveSchema: liveSchema, offsetsSchema: offsetsSchema)
        } catch {
            await connection.close()
            throw error
        }
    }

    func close() async { await connection.close() }

    static func lockName(_ target: RebuildTarget) -> String { "backbone rebuild \(target.name)" }

    static func schema(of table: String, _ connection: PostgresConnection) async throws -> String? {
        try await connection.query("""
            SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)
            """, [table]).first?.decode(String.self, "nspname")
    }

    static func quote(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    // MARK: - Shadow lifecycle

    /// The shadow left by an interrupted run: its cluster and positions; nil when there is
    /// none. A shadow without a topic per position (made before rebuilds read several topics)
    /// has no positions, so it is started over.
    func load() async throws -> (clusterID: String?, positions: [KafkaTopicPartition: Position])? {
        let exists = try await connection.query("""
            SELECT to_regclass($1) IS NOT NULL AS present,
                   EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'topic') AS topics
            """, ["\(shadow).rebuild_positions"])
        guard try exists.first?.decode(Bool.self, "present") == true else { return nil }
        let info = try await connection.query("SELECT cluster_id FROM \(shadow).rebuild_info")
        var positions: [KafkaTopicPartition: Position] = [:]
        if try exists.first?.decode(Bool.self, "topics") == true {
            for row in try await connection.query("SELECT topic, partition, start_offset, next_offset FROM \(shadow).rebuild_positions") {
                let tp = KafkaTopicPartition(topic: try row.decode(String.self, "topic"), partition: Int32(try row.decode(Int64.self, "partition")))
                positions[tp] = Position(start: try row.decode(Int64.self, "start_offset"), next: try row.decode(Int64.self, "next_offset"))
            }
        }
        return (try info.first?.decode(String?.self, "cluster_id"), positions)
    }

    /// Creates the shadow (schema, the service's tables, the rebuild's positions) in one
    /// transaction: it exists completely or not at all.
    func create(clusterID: String?, starts: [KafkaTopicPartition: Int64]) async throws {
        try await connection.withTransaction { connection in
            try await connection.execute("DROP SCHEMA IF EXISTS \(shadow) CASCADE")
            try await connection.execute("CREATE SCHEMA \(shadow)")
            for migration in target.migrations { try await connection.runScript(migration.sql) }
            try await connection.runScript("""
                CREATE TABLE \(shadow).rebuild_info (cluster_id text, topics text[] NOT NULL, started_at timestamptz NOT NULL DEFAULT now());
                CREATE TABLE \(shadow).rebuild_positions (
                    topic text NOT NULL, partition integer NOT NULL, start_offset bigint NOT NULL, next_offset bigint NOT NULL,
                    PRIMARY KEY (topic, partition));
                """)
            try await connection.execute("INSERT INTO \(shadow).rebuild_info (cluster_id, topics) VALUES ($1, $2)", [clusterID, target.topics])
            let sorted = starts.sorted { $0.key < $1.key }
            try await connection.execute("""
                INSERT INTO \(shadow).rebuild_positions (topic, partition, start_offset, next_offset)
                SELECT t, p, s, s FROM unnest($1::text[], $2::int[], $3::bigint[]) AS u(t, p, s)
                """, [sorted.map(\.key.topic), sorted.map { Int($0.key.partition) }, sorted.map(\.value)])
            try await checkRelations(connection)
        }
    }

    /// The migrations must create exactly the relations the target knows: a table it did not
    /// know of would be left behind at the swap.
    private func checkRelations(_ connection: PostgresConnection) async throws {
        let rows = try await connection.query("""
            SELECT c.relname FROM pg_class c
            WHERE c.relnamespace = to_regnamespace($1) AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
              AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i'))
            """, [target.shadowSchema])
        let found = Set(try rows.map { try $0.decode(String.self, "relname") })
        let known = Set(target.tables + target.views + target.scratch + ["rebuild_info", "rebuild_positions"])
        let unknown = found.subtracting(known).sorted()
        let missing = Set(target.tables + target.views).subtracting(found).sorted()
        guard unknown.isEmpty, missing.isEmpty else {
            throw CommandError(code: .internalMismatch,
                               message: "the \(target.service) migrations create relations `backbone rebuild` does not know "
                                   + "(unknown: \(unknown.joined(separator: ", ")); missing: \(missing.joined(separator: ", "))); "
                                   + "update RebuildTarget")
        }
    }

    /// Drops the shadow and everything in it.
    func drop() async throws {
        try await connection.execute("DROP SCHEMA IF EXISTS \(shadow) CASCADE")
    }

    // MARK: - Applying

    /// Applies a decoded batch in the open transaction and moves the stored positions to
    /// `next`; returns how many of its records were left out.
    func apply(_ batch: DecodedBatch, advancing next: [KafkaTopicPartition: Int64], in connection: PostgresConnection) async throws
        -> Int {
        let failed = try await batch.apply(connection)
        let moves = next.sorted { $0.key < $1.key }
        try await connection.execute("""
            UPDATE \(shadow).rebuild_positions p SET next_offset = u.n FROM unnest($1::text[], $2::int[], $3::bigint[]) AS u(t, p, n)
            WHERE p.topic = u.t AND p.partition = u.p
            """, [moves.map(\.key.topic), moves.map { Int($0.key.partition) }, moves.map(\.value)])
        return batch.undecodable + failed
    }

    // MARK: - The live side

    /// The live consumer groups' stored positions on the target's topics (every partition of
    /// each, the group that reads it for these tables); `forUpdate` locks the rows (a live
    /// batch then waits to commit its offsets).
    func livePositions(in connection: PostgresConnection, forUpdate: Bool = false) async throws -> [KafkaTopicPartition: LivePosition] {
        var positions: [KafkaTopicPartition: LivePosition] = [:]
        for row in try await connection.query("""
            SELECT o.topic, o.partition, o.next_offset, o.cluster_id, o.history_lost_at FROM \(Self.quote(offsetsSchema)).consumer_offsets o
            JOIN unnest($1::text[], $2::text[]) AS t(group_id, topic) ON o.group_id = t.group_id AND o.topic = t.topic
            ORDER BY o.topic, o.partition \(forUpdate ? "FOR UPDATE OF o" : "")
            """, [target.topics.map(target.group(of:)), target.topics]) {
            let tp = KafkaTopicPartition(topic: try row.decode(String.self, "topic"), partition: Int32(try row.decode(Int64.self, "partition")))
            positions[tp] = LivePosition(next: try row.decode(Int64.self, "next_offset"), clusterID: try row.decode(String?.self, "cluster_id"),
                                         historyLostAt: try row.decode(Date?.self, "history_lost_at"))
        }
        return positions
    }

    /// Clears the live groups' `history_lost_at` on the target's topics (in the swap).
    func clearHistoryLost(in connection: PostgresConnection) async throws {
        try await connection.execute("""
            UPDATE \(Self.quote(offsetsSchema)).consumer_offsets o SET history_lost_at = NULL
            FROM unnest($1::text[], $2::text[]) AS t(group_id, topic)
            WHERE o.group_id = t.group_id AND o.topic = t.topic AND o.history_lost_at IS NOT NULL
            """, [target.topics.map(target.group(of:)), target.topics])
    }

    /// Copies what no topic holds (the target's `carried` statements) from the live tables
    /// into the shadow, in the caller's transaction.
    func carryOver(in connection: PostgresConnection) async throws {
        for statement in target.carried(shadow, live) { try await connection.execute(statement) }
    }

    /// Blocks the live projection's writes (not its readers) until the transaction ends,
    /// table by table in the order the projection writes them — after the service's fence,
    /// when it has one, which waits out the live batches under way and holds back new ones
    /// (several groups, or one whose batches write the tables in no fixed order, could
    /// otherwise hold one table while waiting for the next).
    func lockLiveTables(in connection: PostgresConnection) async throws {
        if let fence = target.fence { _ = try await connection.query("SELECT pg_advisory_xact_lock($1::bigint)", [fence]) }
        for table in target.tables {
            try await connection.execute("LOCK TABLE \(live).\(Self.quote(table)) IN EXCLUSIVE MODE")
        }
    }

    /// Moves the live relations out (to the retired schema), the shadow's in, and drops the
    /// shadow schema — inside the caller's transaction, so readers see the old model or the
    /// new one.
    func swap(in connection: PostgresConnection) async throws {
        let retired = Self.quote(target.retiredSchema)
        try await connection.execute("DROP SCHEMA IF EXISTS \(retired) CASCADE")
        try await connection.execute("CREATE SCHEMA \(retired)")
        let relations = target.views.map { ("VIEW", $0) } + target.tables.map { ("TABLE", $0) }
        for (kind, name) in relations {
            try await connection.execute("ALTER \(kind) \(live).\(Self.quote(name)) SET SCHEMA \(retired)")
        }
        for (kind, name) in relations.reversed() {
            try await connection.execute("ALTER \(kind) \(shadow).\(Self.quote(name)) SET SCHEMA \(live)")
        }
        try await connection.execute("DROP SCHEMA \(shadow) CASCADE")
    }

    /// Drops the live tables the swap moved out, after its commit: dropping a large table
    /// takes a while, and readers need not wait for it. Whatever a crash left in between is
    /// dropped by the next run.
    func dropRetired() async throws {
        try await connection.execute("DROP SCHEMA IF EXISTS \(Self.quote(target.retiredSchema)) CASCADE")
    }
}
