import Auth
import BackboneTestSupport
import Foundation
import Synchronization
import Testing

/// `backbone token`, `backbone demo` with nothing running, and `backbone dev --infra-only`.
@Suite("Operator commands", .serialized, .timeLimit(.minutes(3)), .enabled(if: Integration.isEnabled))
struct OperatorCommandTests {
    @Test("token prints a JWT for the user that verifies with the secret and expires in the ttl")
    func token() async throws {
        let secret = "cli-test-secret-0123456789abcdef"
        let outcome = try await CLIProcess.run(["token", "--user", "u", "--ttl", "60"], environment: ["JWT_SECRET": secret])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let claims = try JWTCodec(secret: secret).verify(outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(claims.sub == "u")
        let remaining = (claims.exp ?? 0) - Int64(Date().timeIntervalSince1970)
        #expect((55...60).contains(remaining))
        #expect(throws: AuthError.self) { try JWTCodec(secret: "another-secret-0123456789abcdef").verify(outcome.stdout) }
    }

    @Test("demo with nothing running exits 1 and names the URL it could not reach")
    func demoWithoutServices() async throws {
        let url = "http://127.0.0.1:\(Integration.freePort())"
        let outcome = try await CLIProcess.run(["demo"], environment: [
            "JWT_SECRET": "cli-test-secret-0123456789abcdef", "INGEST_URL": url,
            "PROGRESS_URL": "http://127.0.0.1:\(Integration.freePort())", "ANALYTICS_URL": "http://127.0.0.1:\(Integration.freePort())",
        ])
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains(url))
        #expect(outcome.stderr.contains("ingest"))
    }

    @Test("dev --infra-only brings up Kafka with the system topics and a migrated PostgreSQL, and stops cleanly on Ctrl-C")
    func devInfraOnly() async throws {
        let home = CLIProcess.emptyHome()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Integration.executable("backbone"))
        process.arguments = ["dev", "--infra-only"]
        var environment = CLIProcess.environment(["BACKBONE_HOME": home, "LOG_LEVEL": "warning"])
        environment["DATABASE_URL"] = nil
        process.environment = environment
        let log = home + "-dev.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: log) }
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        let exited = ExitWatch()
        process.terminationHandler = { exited.finish($0.terminationStatus) }
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

        let envPath = home + "/dev.env"
        let ready = await Integration.eventually(timeout: .seconds(90), every: .milliseconds(250)) {
            FileManager.default.fileExists(atPath: envPath) || !process.isRunning
        }
        let logText = { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        try #require(ready && process.isRunning, "dev did not come up: \(logText())")
        let values = try String(contentsOfFile: envPath, encoding: .utf8)
        func value(_ key: String) -> String? {
            values.split(separator: "\n").first { $0.hasPrefix(key + "=") }
                .map { String($0.dropFirst(key.count + 1)).trimmingCharacters(in: CharacterSet(charactersIn: "'")) }
        }
        let brokers = try #require(value("KAFKA_BROKERS"))
        let database = try #require(value("DATABASE_URL"))

        let metadata = try await CLIProcess.shell("kcat -L -b \(brokers) -m 10")
        #expect(metadata.status == 0, "\(metadata.output)")
        for topic in ["reading.events.v2", "reading.progress.v1", "room.transcode.requests.v1", "realtime.broadcasts.v1"] {
            #expect(metadata.output.contains("topic \"\(topic)\""), "\(topic) missing from \(metadata.output)")
        }
        let migrations = try await CLIProcess.shell("psql '\(database)' -At -c 'select version from schema_migrations'")
        #expect(migrations.status == 0, "\(migrations.output)")
        #expect(!migrations.output.split(separator: "\n").isEmpty)

        kill(process.processIdentifier, SIGINT)
        let status = await exited.wait(timeout: .seconds(30))
        #expect(status == 0, "dev exit: \(String(describing: status))\n\(logText())")
    }
}

/// The exit status of a child process, awaited with a timeout (nil: still running).
final class ExitWatch: Sendable {
    private let status = Mutex<Int32?>(nil)

    func finish(_ code: Int32) { status.withLock { $0 = code } }

    func wait(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let code = status.withLock({ $0 }) { return code }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return status.withLock { $0 }
    }
}
