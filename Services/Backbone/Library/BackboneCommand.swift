import Foundation
import USD

/// The operator CLI's entry point: dispatches `backbone <command> …`.
public enum BackboneCommand {
    public static let usage = """
    usage: backbone <command> [options]

    commands:
      dev [--infra-only]          run the whole system on this machine (embedded Kafka + private PostgreSQL)
      migrate                     apply database migrations to DATABASE_URL
      token --user ID [--ttl S]   print a JWT for a user, signed with JWT_SECRET
      usd inspect FILE [--json]   validate a USDZ package and print its prims
    """

    public static func main(arguments: [String]) async -> Int32 {
        guard let command = arguments.first else {
            print(usage)
            return 2
        }
        let rest = Array(arguments.dropFirst())
        switch command {
        case "usd":
            return USDInspectCommand.run(arguments: rest)
        case "help", "--help", "-h":
            print(usage)
            return 0
        default:
            FileHandle.standardError.write(Data("backbone: unknown command '\(command)'\n\(usage)\n".utf8))
            return 2
        }
    }
}
