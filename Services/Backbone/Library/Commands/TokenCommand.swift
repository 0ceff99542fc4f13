import Auth
import Foundation

/// `backbone token --user ID [--ttl SECONDS] [--service]` or `backbone token --anon`: prints a
/// JWT signed with `JWT_SECRET` (from the environment or `.backbone/dev.env`) — a user's or a
/// service's token, or the project's anon key an app is configured with (`JWTCodec.anonKey`).
enum TokenCommand {
    static let usage = "usage: backbone token --user ID [--ttl SECONDS] [--service] | backbone token --anon"

    static func run(_ arguments: [String]) throws -> Int32 {
        let args = try CommandLineArguments(arguments, valued: ["user", "ttl"])
        try args.only(["user", "ttl", "service", "anon"])
        let anonymous = args.flag("anon")
        let user = args.value("user") ?? ""
        guard anonymous ? user.isEmpty && !args.flag("service") && args.value("ttl") == nil : !user.isEmpty else {
            throw CommandLineArguments.UsageError(description: usage)
        }
        let ttl = try args.int("ttl") ?? 86_400
        guard ttl > 0 else { throw CommandLineArguments.UsageError(description: "--ttl must be positive") }
        guard let secret = DevEnvironment.resolved()["JWT_SECRET"], !secret.isEmpty else {
            throw CommandLineArguments.UsageError(description: "JWT_SECRET is not set (export it, or start `backbone dev` to write .backbone/dev.env)")
        }
        let codec = JWTCodec(secret: secret)
        print(anonymous ? codec.anonKey : codec.issue(userID: user, ttl: Int64(ttl), role: args.flag("service") ? "service" : nil))
        return 0
    }
}
