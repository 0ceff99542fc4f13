import Foundation
import Kafka
import ServiceLogging

/// `backbone rebuild progress|analytics|catalog|learning|social [--dry-run] [--allow-gaps] [--abort]`: re-projects
/// a read model from the start of its topics into shadow tables while the live service keeps
/// serving, then swaps them in atomically at the live consumer's exact position (see
/// `Rebuilder`). `--dry-run` shows how the live model differs instead of swapping.
enum RebuildCommand {
    static let usage = """
    usage: backbone rebuild progress|analytics|catalog|learning|social [--dry-run] [--allow-gaps] [--abort] [--batch N] [--rows N]

    Re-projects the read model from offset 0 of its topics into shadow tables (schema rebuild_<model>)
    with the service's own projection while the service keeps serving reads, then swaps them in, in one
    transaction, exactly at the live consumer's positions: nothing is applied twice or skipped, and the
    GET endpoints answer throughout.

      progress   reading_progress (progress-projector) from reading.events.v2
      analytics  the analytics tables (analytics-aggregator) from reading.events.v2
      catalog    the room catalog (transcode-worker, /rest/v1/rooms) from room.transcode.requests.v1,
                 room.transcode.status.v1 and room.uploads.v1, and the remixes' forks from room.interactions.v1
      learning   the learning app's read model (analytics-aggregator) from learning.sessions.v1
      social     comments, likes, profiles, notifications and the rooms' counts (transcode-worker) from
                 room.interactions.v1 and room.transcode.status.v1; read marks are carried over

      --dry-run      build the shadow, print how the live model differs (rows added, removed, changed),
                     drop the shadow; exit status 3 when it differs, 0 when it is what the topic says
      --allow-gaps   rebuild even though retention removed the topics' oldest records (they are left out)
      --abort        drop the shadow tables of an interrupted rebuild
      --batch N      records per shadow transaction (default 4000)
      --rows N       differing rows listed per table by --dry-run (default 20; counts are always complete)

    An interrupted rebuild (Ctrl-C, kill -9) resumes where it stopped when run again.
    DATABASE_URL and KAFKA_BROKERS come from the environment or .backbone/dev.env; the consumer group
    and topics from the service's own settings (PROGRESS_GROUP_ID, READING_EVENTS_TOPIC, CATALOG_GROUP_ID,
    ROOM_TRANSCODE_REQUESTS_TOPIC, …).
    Progress on a terminal; JSON lines when standard output is not one.

    examples:
      backbone rebuild progress --dry-run     # is reading_progress what reading.events.v2 says it should be?
      backbone rebuild analytics              # rebuild the analytics tables while analytics-aggregator serves
      backbone rebuild catalog --dry-run      # is the room catalog what the room topics say it should be?
      backbone rebuild social                 # rebuild comments, likes, notifications while transcode-worker serves
    """

    static func run(_ arguments: [String], logger: Logger) async throws -> Int32 {
        let args = try CommandLineArguments(arguments, valued: ["batch", "rows"])
        if args.flag("help") || args.positional == ["help"] {
            print(usage)
            return 0
        }
        try args.only(["dry-run", "allow-gaps", "abort", "batch", "rows", "help"])
        guard args.positional.count == 1, let name = args.positional.first else {
            throw CommandLineArguments.UsageError(description: "name the read model to rebuild: progress, analytics, catalog, learning or social\n\(usage)")
        }
        let environment = DevEnvironment.resolved()
        guard let target = try RebuildTarget.named(name, environment: environment) else {
            throw CommandLineArguments.UsageError(description: "unknown read model '\(name)': rebuild progress, analytics, catalog, learning or social")
        }
        var options = Rebuilder.Options()
        options.dryRun = args.flag("dry-run")
        options.allowGaps = args.flag("allow-gaps")
        if let batch = try args.int("batch") {
            guard (1...50_000).contains(batch) else { throw CommandLineArguments.UsageError(description: "--batch must be 1…50000") }
            options.batchRecords = batch
        }
        if let rows = try args.int("rows") {
            guard rows >= 0 else { throw CommandLineArguments.UsageError(description: "--rows must be ≥ 0") }
            options.rowLimit = rows
        }
        let url = try DatabaseSettings.url(in: environment)
        let progress = CommandProgress(command: "rebuild \(name)")
        if args.flag("abort") {
            guard !options.dryRun else { throw CommandLineArguments.UsageError(description: "--abort and --dry-run do not go together") }
            return try await abort(target, url: url, logger: logger, progress: progress)
        }
        let settings = try KafkaSettings.resolve(logger: logger)
        let rebuilder = Rebuilder(target: target, options: options, databaseURL: url, settings: settings, progress: progress,
                                  logger: logger)
        do {
            return try await Interruptible.run { try await rebuilder.run() }
        } catch where Rebuilder.isCancellation(error) {
            progress.report("interrupted", [("model", .string(name))], text: """
                interrupted; the shadow tables (schema \(target.shadowSchema)) are kept: run the same command again to resume, \
                or `backbone rebuild \(name) --abort` to drop them
                """)
            return 130
        }
    }

    /// `--abort`: drops the shadow of an interrupted rebuild (under the rebuild lock, so never
    /// under a running one).
    static func abort(_ target: RebuildTarget, url: String, logger: Logger, progress: CommandProgress) async throws -> Int32 {
        let model = try await ShadowModel.open(target: target, url: url, logger: logger)
        let existed: Bool
        do {
            existed = try await model.load() != nil
            try await model.drop()
            try await model.dropRetired()
        } catch {
            await model.close()
            throw error
        }
        await model.close()
        progress.report("aborted", [("model", .string(target.name)), ("dropped", .bool(existed))],
                        text: existed ? "dropped the shadow tables of the interrupted \(target.name) rebuild (schema \(target.shadowSchema))"
                                      : "no \(target.name) rebuild to abort: there are no shadow tables")
        return 0
    }
}

extension CommandError.Code {
    static let notMigrated = CommandError.Code(rawValue: "not_migrated")
    static let rebuildRunning = CommandError.Code(rawValue: "rebuild_running")
    static let retentionGap = CommandError.Code(rawValue: "retention_gap")
    static let untrustedPosition = CommandError.Code(rawValue: "untrusted_position")
    static let internalMismatch = CommandError.Code(rawValue: "internal_mismatch")
}
