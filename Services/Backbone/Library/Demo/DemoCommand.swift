import Auth
import Foundation
import ServiceLogging

/// `backbone demo`: drives a realistic reading session and a room upload (Flow A: upload-init,
/// presigned PUTs, upload-complete, then the transcode worker's stages and `ready` as they
/// arrive on the room's realtime channel over a WebSocket, and the catch-up query for grade and
/// outputs) through a running system (`INGEST_URL`, `PROGRESS_URL`, `ANALYTICS_URL`,
/// `TRANSCODE_URL`, `REALTIME_URL`, `JWT_SECRET` from the environment or `.backbone/dev.env`;
/// the dev ports when unset) and prints what came out.
package enum DemoCommand {
    package struct Endpoints {
        var ingest: String
        var progress: String
        var analytics: String
        var transcode: String
        var realtime: String

        package init(ingest: String, progress: String, analytics: String, transcode: String, realtime: String) {
            self.ingest = ingest
            self.progress = progress
            self.analytics = analytics
            self.transcode = transcode
            self.realtime = realtime
        }
    }

    /// The capture the room upload sends: a RoomPlan package and its CapturedRoom JSON.
    package struct Scan {
        var package: String
        var roomplan: String

        package init(package: String, roomplan: String) {
            self.package = package
            self.roomplan = roomplan
        }
        /// The RoomPlan-shaped scan of the test fixtures, from the project folder.
        static let fixture = Scan(package: "Tests/USDTests/Fixtures/roomscan.usdz",
                                  roomplan: "Tests/USDTests/Fixtures/roomscan.roomplan.json")
    }

    static func run(_ arguments: [String], logger: Logger) async throws -> Int32 {
        let args = try CommandLineArguments(arguments, valued: ["user", "scan", "roomplan"])
        try args.only(["user", "scan", "roomplan"])
        guard args.positional.isEmpty else {
            throw CommandLineArguments.UsageError(description: "usage: backbone demo [--user ID] [--scan FILE.usdz --roomplan FILE.json]")
        }
        let values = DevEnvironment.resolved()
        guard let secret = values["JWT_SECRET"], !secret.isEmpty else {
            throw CommandLineArguments.UsageError(description: "JWT_SECRET is not set (export it, or start `backbone dev` to write .backbone/dev.env)")
        }
        let endpoints = Endpoints(ingest: values["INGEST_URL"] ?? "http://127.0.0.1:8080",
                                  progress: values["PROGRESS_URL"] ?? "http://127.0.0.1:8081",
                                  analytics: values["ANALYTICS_URL"] ?? "http://127.0.0.1:8082",
                                  transcode: values["TRANSCODE_URL"] ?? "http://127.0.0.1:8083",
                                  realtime: values["REALTIME_URL"] ?? "http://127.0.0.1:8084")
        let scan = Scan(package: args.value("scan") ?? Scan.fixture.package, roomplan: args.value("roomplan") ?? Scan.fixture.roomplan)
        let user = args.value("user") ?? "demo-\(UUID().uuidString.prefix(8).lowercased())"
        let session = DemoSession(endpoints: endpoints, scan: scan, codec: JWTCodec(secret: secret), user: user,
                                  logger: logger)
        try await session.run()
        return 0
    }
}
