import DevInfrastructure
import Foundation
import JSON
import Kafka
import Postgres
import Projection
import ServiceLogging

/// `backbone offsets [--group G]` and `backbone offsets reset …`: the consumer groups'
/// positions, which the projections keep in PostgreSQL (`consumer_offsets`, see
/// `StoredOffsets`) where Kafka's own tools cannot see them.
enum OffsetsCommand {
    static let help = """
    usage: backbone offsets [--group G] [--json]
           backbone offsets reset --group G [--topic T] [--partition P] --to earliest|latest|OFFSET|TIME [--dry-run] [--wait S]

    Lists every stored position (DATABASE_URL) with its partition's low and high watermarks
    (KAFKA_BROKERS) and the lag (records still to project), or moves positions the way
    `kafka-consumer-groups --reset-offsets` moves committed offsets. Safe while the service
    runs: the running owner takes the moved partitions over within a second and re-reads
    them from the new position (projections are idempotent, so re-read records are harmless).

      --to earliest    the partition's low watermark (everything still held is projected again)
      --to latest      the high watermark (skip everything not yet projected)
      --to OFFSET      that offset in every selected partition
      --to TIME        the first record at or after an ISO-8601 time (2026-12-01T08:00:00Z)
      --dry-run        print what would change and change nothing
      --wait S         wait up to S seconds (default 10) for the running service to take over

    examples:
      backbone offsets --group progress-projector
      backbone offsets reset --group progress-projector --topic reading.events.v2 --to 2026-12-01T08:00:00Z
    """

    static func run(_ arguments: [String], logger: Logger) async throws -> Int32 {
        if CommandOutput.help(arguments, help) { return 0 }
        if arguments.first == "reset" { return try await reset(Array(arguments.dropFirst()), logger: logger) }
        let args = try CommandLineArguments(arguments, valued: ["group"])
        try args.only(["group", "json"])
        guard args.positional.isEmpty else { throw CommandLineArguments.UsageError(description: help) }
        let settings = try KafkaSettings.resolve(logger: logger)
        let positions = try await DatabaseSettings.with(applicationName: "backbone-offsets", logger: logger) { client in
            let positions = try await StoredOffsets.list(group: args.value("group"), client: client)
            if positions.isEmpty, let group = args.value("group") { throw try await unknownGroup(group, client: client) }
            return positions
        }
        if positions.isEmpty {
            FileHandle.standardError.write(Data("backbone: no stored positions (no projection has consumed against this database yet)\n".utf8))
            return 0
        }
        let admin = try settings.admin()
        let cluster = try await currentCluster(admin, settings: settings)
        var rows: [Row] = []
        for position in positions {
            let marks = try? await admin.watermarks(topic: position.partition.topic, partition: position.partition.partition)
            rows.append(Row(position: position, low: marks?.low, high: marks?.high, currentCluster: cluster))
        }
        let writer = LineWriter()
        if CommandOutput.wantsJSON(args) {
            for row in rows { writer.write(line: Array(row.json.utf8)) }
        } else {
            var cells = [["GROUP", "TOPIC", "PARTITION", "POSITION", "LOW", "HIGH", "LAG", "OWNER", "UPDATED"]]
            cells += rows.map(\.cells)
            writer.write(CommandOutput.table(cells))
            let total = rows.compactMap(\.lag).reduce(0, +)
            writer.write("total lag: \(total) record(s)\n")
        }
        writer.flush()
        return 0
    }

    /// One stored position with its partition's watermarks.
    struct Row {
        var position: StoredOffsets.Position
        var low: Int64?
        var high: Int64?
        var currentCluster: String?

        /// Stored against another cluster: the owner re-reads the partition from its earliest offset.
        var otherCluster: Bool { position.isOtherCluster(currentCluster) }

        var lag: Int64? {
            guard let low, let high else { return nil }
            return position.lag(low: low, high: high, currentCluster: currentCluster)
        }

        var note: String? {
            if low == nil { return "topic missing" }
            if otherCluster { return "stored against another cluster; re-read from earliest" }
            if position.owner == StoredOffsets.movedOwner { return "moved; not yet taken over" }
            return nil
        }

        var cells: [String] {
            [position.groupID, position.partition.topic, String(position.partition.partition),
             position.nextOffset < 0 ? "earliest" : String(position.nextOffset), low.map(String.init) ?? "-",
             high.map(String.init) ?? "-", lag.map(String.init) ?? "-", position.owner,
             ISO8601DateFormatter().string(from: position.updatedAt) + (note.map { "  (\($0))" } ?? "")]
        }

        var json: String {
            func number(_ value: Int64?) -> String { value.map(String.init) ?? "null" }
            return "{\"group\":\(JSONString.quote(position.groupID)),\"topic\":\(JSONString.quote(position.partition.topic)),"
                + "\"partition\":\(position.partition.partition),\"position\":\(position.nextOffset),\"low\":\(number(low)),"
                + "\"high\":\(number(high)),\"lag\":\(number(lag)),\"owner\":\(JSONString.quote(position.owner)),"
                + "\"generation\":\(position.generation),\"otherCluster\":\(otherCluster),"
                + "\"updatedAt\":\"\(ISO8601DateFormatter().string(from: position.updatedAt))\""
                + (note.map { ",\"note\":\(JSONString.quote($0))" } ?? "") + "}"
        }
    }

    static func currentCluster(_ admin: KafkaAdmin, settings: KafkaSettings) async throws -> String? {
        do {
            return EmbeddedKafkaCluster.identity(reportedID: try await admin.clusterID(), bootstrapServers: settings.brokers)
        } catch {
            throw CommandError(code: .kafkaUnavailable, message: "cannot reach Kafka: \(error.message) — is it running (`backbone dev`)?",
                               context: "Kafka at \(settings.brokers)", isRetriable: true)
        }
    }

    static func unknownGroup(_ group: String, client: PostgresClient) async throws -> CommandError {
        let groups = Set(try await StoredOffsets.list(group: nil, client: client).map(\.groupID)).sorted()
        return CommandError(code: .unknownGroup,
                            message: "no stored positions for this group — it does not exist or has never consumed "
                                + "(groups: \(groups.isEmpty ? "none" : groups.joined(separator: ", ")))",
                            context: "group \(group)")
    }
}
