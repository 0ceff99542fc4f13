import Foundation
import Logging
import USD

/// The operator CLI's entry point: dispatches `backbone <command> …`.
public enum BackboneCommand {
    public static let usage = """
    usage: backbone <command> [options]

    commands:
      dev [--infra-only] [--port-offset N]
                                  run the whole system on this machine (embedded Kafka + private PostgreSQL)
      migrate                     apply database migrations to DATABASE_URL
      token --user ID [--ttl S] [--service]
                                  print a JWT for a user (or a service token), signed with JWT_SECRET
      usd inspect FILE [--json]   validate a USDZ package and print its prims
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
            case "migrate": return try await MigrateCommand.run(rest, logger: logger)
            case "token": return try TokenCommand.run(rest)
            case "usd": return USDInspectCommand.run(arguments: rest)
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
