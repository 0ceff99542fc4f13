import Foundation
import ServiceLogging
import USD

/// The operator CLI's entry point: dispatches `backbone <command> …`.
public enum BackboneCommand {
    public static let usage = """
    usage: backbone <command> [options]

    commands:
      dev [--infra-only] [--port-offset N] [--drain-seconds S]
                                  run the whole system on this machine (embedded Kafka + private PostgreSQL);
                                  at Ctrl-C waits up to S seconds (default 20) for the consumers to process
                                  what was accepted, since the embedded broker forgets it
      migrate                     apply database migrations to DATABASE_URL
      token --user ID [--ttl S] [--service] | token --anon
                                  print a JWT for a user (or a service token, or the app's anon key),
                                  signed with JWT_SECRET
      usd inspect FILE [--json]   validate a USDZ package and print its prims

    topic replay (KAFKA_BROKERS from the environment or .backbone/dev.env):
      topics [--json]             every topic: partition count and each partition's low/high watermarks
      tail TOPIC [--from beginning|end|OFFSET|TIME] [--follow] [--key K] [--partition P] [--limit N]
                                  print records as JSON lines {"topic","partition","offset","timestamp","key","value"};
                                  --from defaults to beginning (end with --follow); TIME is ISO-8601;
                                  without --follow stops at the high watermarks seen at start
      dump [TOPIC...]             every record of the topics (default: all non-internal) as JSON lines
      republish FILE|- [--topic T]
                                  produce JSON lines (tail/dump format) to their topic (or T), key and value
                                  byte for byte; a malformed line stops everything before anything is sent
      rebuild progress|analytics|catalog|learning|social [--dry-run] [--allow-gaps] [--abort]
                                  re-project a read model from offset 0 into shadow tables while the service
                                  serves, then swap them in atomically at its position (--dry-run: show how
                                  the live model differs); `backbone rebuild --help` for more

    operations (the settings of the commands below, and the services' *_URL):
      status [--json] [--interval S] [--max-lag-seconds N]
                                  readiness, consumer lag (records, seconds, rate), DLQs, outboxes, the transcode
                                  queue, uploads and deletions waiting; live on a terminal, one JSON document
                                  otherwise; exit 0 healthy, 1 degraded, 2 down

    stored positions and dead letters (also DATABASE_URL; each has --help with an example):
      offsets [--group G]         every stored consumer position with its partition's watermarks and lag
      offsets reset --group G [--topic T] [--partition P] --to earliest|latest|OFFSET|TIME [--dry-run]
                                  move stored positions (safe while the service runs) and print what changed
      dlq list [TOPIC]            dead letters per DLQ and error: count, oldest, newest, replayed
      dlq show TOPIC.dlq [--where ERROR] [--limit N]
                                  dead letters as JSON lines: error, origin, original key and value
      dlq replay TOPIC.dlq [--where ERROR] [--dry-run]
                                  produce the original records to their origin topic again, once

    demo:
      demo [--user ID] [--scan FILE.usdz --roomplan FILE.json]
                                  drive a reading session and a room upload through a running system
                                  (INGEST_URL, PROGRESS_URL, ANALYTICS_URL, TRANSCODE_URL, REALTIME_URL, JWT_SECRET)
                                  and show what came out; the room's stages and ready arrive over a WebSocket
    """

    public static func main(arguments: [String]) async -> Int32 {
        guard let command = arguments.first else {
            print(usage)
            return 2
        }
        let rest = Array(arguments.dropFirst())
        let level = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(name:)) ?? .info
        let logger = Logger(label: "backbone", level: level)
        do {
            switch command {
            case "dev": return try await DevCommand.run(rest, logger: logger)
            case "dev-watchdog": return await DevWatchdog.run(rest, logger: logger)
            case "migrate": return try await MigrateCommand.run(rest, logger: logger)
            case "token": return try TokenCommand.run(rest)
            case "usd": return USDInspectCommand.run(arguments: rest)
            case "topics": return try await TopicsCommand.run(rest, logger: logger)
            case "tail": return try await TailCommand.run(rest, logger: logger)
            case "dump": return try await DumpCommand.run(rest, logger: logger)
            case "republish": return try await RepublishCommand.run(rest, logger: logger)
            case "status": return try await StatusCommand.run(rest, logger: logger)
            case "offsets": return try await OffsetsCommand.run(rest, logger: logger)
            case "dlq": return try await DeadLetterCommand.run(rest, logger: logger)
            case "rebuild": return try await RebuildCommand.run(rest, logger: logger)
            case "demo": return try await DemoCommand.run(rest, logger: logger)
            case "help", "--help", "-h":
                print(usage)
                return 0
            default:
                fail("unknown command '\(command)'\n\(usage)")
                return 2
            }
        } catch let error as CommandLineArguments.UsageError {
            fail(error.description)
            return 2
        } catch {
            fail("\(error)")
            return 1
        }
    }

    static func fail(_ message: String) {
        FileHandle.standardError.write(Data("backbone: \(message)\n".utf8))
    }
}
