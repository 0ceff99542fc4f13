import Auth
import Foundation

/// `backbone token --user ID [--ttl SECONDS] [--service]`: prints a JWT signed with
/// `JWT_SECRET` (from the environment or `.backbone/dev.env`).
enum TokenCommand {
    static func run(_ arguments: [String]) throws -> Int32 {
        let args = try CommandLineArguments(arguments, valued: ["user", "ttl"])
        try args.only(["user", "ttl", "service"])
        guard let user = args.value("user"), !user.isEmpty else {
            throw CommandLineArguments.UsageError(description: "usage: backbone token --user ID [--ttl SECONDS] [--service]")
        }
        let ttl = try args.int("ttl") ?? 86_400
        guard ttl > 0 else { throw CommandLineArguments.UsageError(description: "--ttl must be positive") }
        guard let secret = DevEnvironment.resolved()["JWT_SECRET"], !secret.isEmpty else {
            throw CommandLineArguments.UsageError(description: "JWT_SECRET is not set (export it, or start `backbone dev` to write .backbone/dev.env)")
        }
        print(JWTCodec(secret: secret).issue(userID: user, ttl: Int64(ttl), role: args.flag("service") ? "service" : nil))
        return 0
    }
}
