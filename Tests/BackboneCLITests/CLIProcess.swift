import BackboneTestSupport
import Foundation

/// Runs the built `backbone` executable as a child process, with an environment of our
/// choosing (none of the caller's Kafka/database/dev settings leak in).
struct CLIProcess {
    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    }

    /// A fresh, empty `BACKBONE_HOME` so no `.backbone/dev.env` is picked up.
    static func emptyHome() -> String {
        let path = "/tmp/backbone-cli-test-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func environment(_ extra: [String: String]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        for key in ["KAFKA_BROKERS", "DATABASE_URL", "JWT_SECRET", "INGEST_URL", "PROGRESS_URL", "ANALYTICS_URL", "REALTIME_URL",
                    "LOG_LEVEL"] {
            env[key] = nil
        }
        env["BACKBONE_HOME"] = emptyHome()
        for (key, value) in extra { env[key] = value }
        return env
    }

    /// Runs `backbone arguments…` to completion; `stdin` is fed from that file when given.
    static func run(_ arguments: [String], environment extra: [String: String], stdin: String? = nil) async throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Integration.executable("backbone"))
        process.arguments = arguments
        process.environment = environment(extra)
        let base = NSTemporaryDirectory() + "backbone-cli-\(UInt32.random(in: 0...UInt32.max))"
        _ = FileManager.default.createFile(atPath: base + ".out", contents: nil)
        _ = FileManager.default.createFile(atPath: base + ".err", contents: nil)
        defer {
            try? FileManager.default.removeItem(atPath: base + ".out")
            try? FileManager.default.removeItem(atPath: base + ".err")
        }
        process.standardOutput = FileHandle(forWritingAtPath: base + ".out")
        process.standardError = FileHandle(forWritingAtPath: base + ".err")
        if let stdin { process.standardInput = FileHandle(forReadingAtPath: stdin) }
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
        let out = (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? ""
        return Outcome(status: status, stdout: out, stderr: err)
    }

    /// Runs a shell command line (kcat, psql) and returns its status and combined output.
    static func shell(_ command: String) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command + " 2>&1"]
        let path = NSTemporaryDirectory() + "backbone-cli-sh-\(UInt32.random(in: 0...UInt32.max)).out"
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: path) }
        process.standardOutput = FileHandle(forWritingAtPath: path)
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
        return (status, (try? String(contentsOfFile: path, encoding: .utf8)) ?? "")
    }
}
