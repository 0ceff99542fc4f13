import Foundation
import ServiceLogging

/// `.backbone/dev.env`: the shell-sourceable settings of a running dev stack
/// (`KAFKA_BROKERS`, `DATABASE_URL`, `JWT_SECRET`, one `*_URL` per service). Commands
/// such as `backbone token` fall back to it when the environment does not say.
package struct DevEnvironment {
    static var directory: String {
        ProcessInfo.processInfo.environment["BACKBONE_HOME"] ?? FileManager.default.currentDirectoryPath + "/.backbone"
    }

    static var path: String { directory + "/dev.env" }

    static func write(_ values: [(String, String)], to path: String = DevEnvironment.path) throws {
        let text = "# Written by `backbone dev`; source it: set -a; . \(path); set +a\n"
            + values.map { "\($0.0)=\(shellQuote($0.1))" }.joined(separator: "\n") + "\n"
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    static func read(from path: String = DevEnvironment.path) -> [String: String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            var value = parts[1]
            if value.hasPrefix("'") && value.hasSuffix("'") && value.count >= 2 {
                value = String(value.dropFirst().dropLast()).replacingOccurrences(of: "'\\''", with: "'")
            }
            values[parts[0]] = value
        }
        return values
    }

    /// The process environment, completed by dev.env for keys it lacks.
    package static func resolved() -> [String: String] {
        var values = read()
        for (key, value) in ProcessInfo.processInfo.environment { values[key] = value }
        return values
    }

    /// The key listing which of the written settings the stack made itself (its private
    /// PostgreSQL, its private SeaweedFS), as opposed to ones it was given.
    static let madeHereKey = "BACKBONE_DEV_MADE"
    /// The one origin (the nginx gateway) the apps are pointed at.
    static let appBaseURLKey = "APP_BASE_URL"

    /// The settings `backbone dev` made itself, grouped as it writes them.
    static let madeGroups: [String: [String]] = [
        "postgres": ["DATABASE_URL"],
        "s3": ["S3_ENDPOINT", "S3_PUBLIC_ENDPOINT", "S3_REGION", "S3_BUCKET", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY"],
    ]

    /// `environment` without what a shell took from a previous run's dev.env (`previous`):
    /// a setting the previous stack made itself and that still has the value it wrote there
    /// names a server of that stack, which is gone — the new stack makes its own again.
    /// Returns the environment to use and the settings left out.
    static func withoutPreviousRun(_ environment: [String: String], previous: [String: String]) -> ([String: String], [String]) {
        let made = (previous[madeHereKey] ?? "").split(separator: ",").map(String.init)
        var result = environment
        var ignored: [String] = []
        for group in made {
            guard let keys = madeGroups[group], let first = keys.first,
                  let value = environment[first], value == previous[first] else { continue }
            for key in keys where result[key] != nil && result[key] == previous[key] {
                result[key] = nil
                ignored.append(key)
            }
        }
        return (result, ignored)
    }

    static func shellQuote(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// One `backbone dev` per folder: its private PostgreSQL, SeaweedFS and `dev.env` are the
/// folder's, and a second stack would stop the first one's servers (it takes them for ones a
/// killed run left behind) and overwrite its settings. An exclusive `flock` on
/// `.backbone/dev.lock`, held for the life of the process — the kernel releases it when the
/// process ends, however it ends, so a stack that was killed never locks its folder out.
enum DevFolderLock {
    /// Takes the folder's lock or says who holds it; returns its descriptor, open until exit.
    /// A lock whose holder has ended is held by that run's watchdog (`DevWatchdog`) while it
    /// stops the servers the run left: the start waits for it (at most `watchdogWait`).
    static func acquire(in home: String, watchdogWait: Duration = .seconds(90), logger: Logger) throws -> Int32 {
        let path = home + "/dev.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw CommandError(code: .io, message: "cannot open the folder's lock: \(String(cString: strerror(errno)))", context: path)
        }
        let deadline = ContinuousClock.now + watchdogWait
        var announced = false
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            let holderEnded = pid_t(holder).map { kill($0, 0) != 0 && errno == ESRCH } ?? false
            guard holderEnded, ContinuousClock.now < deadline else {
                close(fd)
                throw CommandError(code: .alreadyRunning,
                                   message: "another backbone dev is running in this folder\(holder.isEmpty ? "" : " (pid \(holder))") — "
                                       + "its settings are in \(home)/dev.env; stop it first (Ctrl-C in its terminal), "
                                       + "or run this one with another BACKBONE_HOME and --port-offset",
                                   context: home)
            }
            if !announced {
                announced = true
                logger.notice("the previous run in this folder (pid \(holder)) ended without stopping its servers; waiting while they stop")
            }
            usleep(100_000)
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return fd
    }
}
