import Foundation
import Postgres
import ServiceLogging

/// `backbone status`: the operator's first look. On a terminal it redraws every second with
/// a short history of each consumer group's lag and apply rate until Ctrl-C; otherwise it
/// prints one JSON document. Exit status 0 healthy, 1 degraded, 2 down.
enum StatusCommand {
    static let help = """
    usage: backbone status [--json] [--interval S] [--max-lag-seconds N]

    Each service's readiness (/readyz at INGEST_URL, PROGRESS_URL, ANALYTICS_URL, TRANSCODE_URL,
    REALTIME_URL), each consumer group's lag in records and seconds and its apply rate, each
    dead-letter topic's depth and what arrived since the last replay, every outbox's entries and
    the age of its oldest, the transcode queue, uploads waiting, account deletions pending.
    Reads only PostgreSQL (DATABASE_URL), Kafka metadata (KAFKA_BROKERS) and the services' HTTP.

    On a terminal it redraws every S seconds (default 1) until Ctrl-C; otherwise (or with --json)
    it prints one JSON document, from two looks S seconds apart (the apply rates).
    Exit status: 0 healthy, 1 degraded (a group over N seconds behind, default 60; dead letters
    since the last replay; an outbox's oldest entry over 60 s; the transcode queue's oldest job
    over 300 s or 5 failures in the last hour; a completed upload unqueued over 300 s; a
    deletion purging over an hour), 2 down (a service not ready or unreachable, PostgreSQL or
    Kafka unreadable). Each reason is on the line that caused it.

    examples:
      backbone status
      backbone status --json | jq '.consumerGroups[] | {group, lagSeconds}'
      backbone status --json > /dev/null || echo "unhealthy: $?"
    """

    static func run(_ arguments: [String], logger: Logger) async throws -> Int32 {
        if CommandOutput.help(arguments, help) { return 0 }
        let args = try CommandLineArguments(arguments, valued: ["interval", "max-lag-seconds"])
        try args.only(["json", "interval", "max-lag-seconds"])
        guard args.positional.isEmpty else { throw CommandLineArguments.UsageError(description: help) }
        var thresholds = StatusReport.Thresholds()
        if let lag = try args.int("max-lag-seconds") {
            guard lag > 0 else { throw CommandLineArguments.UsageError(description: "--max-lag-seconds must be > 0") }
            thresholds.lagSeconds = Double(lag)
        }
        let interval = try args.int("interval") ?? 1
        guard interval > 0 else { throw CommandLineArguments.UsageError(description: "--interval must be > 0") }
        let kafka = try? KafkaSettings.resolve(logger: logger)
        let database = try? DatabaseSettings.client(applicationName: "backbone-status", logger: logger)
        let exitCode = try await look(json: CommandOutput.wantsJSON(args), interval: interval, thresholds: thresholds,
                                      kafka: kafka, database: database, logger: logger)
        await database?.close()
        return exitCode
    }

    static func look(json: Bool, interval: Int, thresholds: StatusReport.Thresholds, kafka: KafkaSettings?,
                     database: PostgresClient?, logger: Logger) async throws -> Int32 {
        if json {
            let first = await StatusSnapshot.take(kafka: kafka, database: database, logger: logger)
            try? await Task.sleep(for: .seconds(interval))
            let report = StatusReport(await StatusSnapshot.take(kafka: kafka, database: database, logger: logger), previous: first,
                                      thresholds: thresholds)
            print(report.json)
            return report.exitCode
        }
        return try await Interruptible.run {
            var history = StatusHistory()
            var previous: StatusSnapshot?
            var exitCode: Int32 = 0
            while !Task.isCancelled {
                // Every `interval` from the start of one look to the next: a slow look (a service
                // that takes its 3 s to answer) shortens the wait rather than adding to it.
                let next = ContinuousClock.now + .seconds(interval)
                let snapshot = await StatusSnapshot.take(kafka: kafka, database: database, logger: logger)
                let report = StatusReport(snapshot, previous: previous, thresholds: thresholds)
                history.add(report)
                FileHandle.standardOutput.write(Data(StatusScreen.redraw(report, history: history, interval: interval).utf8))
                previous = snapshot
                exitCode = report.exitCode
                try? await Task.sleep(until: next)
            }
            return exitCode
        }
    }
}
