import Auth
import Foundation
import Logging

/// `backbone demo`: drives a realistic reading session and a room upload through a running
/// system (`INGEST_URL`, `PROGRESS_URL`, `ANALYTICS_URL`, `JWT_SECRET` from the environment
/// or `.backbone/dev.env`; the dev ports when unset) and prints what came out.
enum DemoCommand {
    struct Endpoints {
        var ingest: String
        var progress: String
        var analytics: String
    }

    static func run(_ arguments: [String], logger: Logger) async throws -> Int32 {
        let args = try CommandLineArguments(arguments, valued: ["user"])
        try args.only(["user"])
        guard args.positional.isEmpty else { throw CommandLineArguments.UsageError(description: "usage: backbone demo [--user ID]") }
        let values = DevEnvironment.resolved()
        guard let secret = values["JWT_SECRET"], !secret.isEmpty else {
            throw CommandLineArguments.UsageError(description: "JWT_SECRET is not set (export it, or start `backbone dev` to write .backbone/dev.env)")
        }
        let endpoints = Endpoints(ingest: values["INGEST_URL"] ?? "http://127.0.0.1:8080",
                                  progress: values["PROGRESS_URL"] ?? "http://127.0.0.1:8081",
                                  analytics: values["ANALYTICS_URL"] ?? "http://127.0.0.1:8082")
        let user = args.value("user") ?? "demo-\(UUID().uuidString.prefix(8).lowercased())"
        let session = DemoSession(endpoints: endpoints, codec: JWTCodec(secret: secret), user: user)
        try await session.run()
        return 0
    }
}
