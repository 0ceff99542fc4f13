import Dispatch
import Foundation

/// Runs helper programs (initdb, pg_ctl, useradd) to completion on a dedicated queue,
/// so `waitUntilExit` never blocks the cooperative thread pool.
enum ProcessRunner {
    struct Outcome: Sendable {
        var status: Int32
        var output: String
        var succeeded: Bool { status == 0 }
    }

    private static let queue = DispatchQueue(label: "postgres.process-runner", attributes: .concurrent)

    /// Runs `executable` with `arguments`; as root with `user` set, through `runuser -u user --`.
    static func run(_ executable: String, _ arguments: [String], as user: String? = nil) async -> Outcome {
        var launch = executable
        var launchArguments = arguments
        if let user, geteuid() == 0 {
            launch = runuserPath
            launchArguments = ["-u", user, "--", executable] + arguments
        }
        let (path, args) = (launch, launchArguments)
        return await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: runBlocking(path, args))
            }
        }
    }

    private static func runBlocking(_ executable: String, _ arguments: [String]) -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return Outcome(status: -1, output: "cannot launch \(executable): \(error)")
        }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }

    static var runuserPath: String {
        ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"]
            .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/sbin/runuser"
    }
}
