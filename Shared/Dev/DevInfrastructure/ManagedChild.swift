import BlockingCalls
import Foundation
import ServiceLogging
import Synchronization

/// A server process that `backbone dev` and the tests start beside themselves (SeaweedFS, the
/// nginx gateway) and must stop on every way out. It runs in a process group of its own (a
/// Ctrl-C in the terminal reaches `backbone dev`, which stops it after its drain), and its pid
/// is kept in `pidFile`, so that the next start in the same folder stops one that a killed run
/// left holding its ports.
final class ManagedChild: Sendable {
    let name: String
    let pidFile: String
    private let logger: Logger
    private let state = Mutex<pid_t?>(nil)

    init(name: String, pidFile: String, logger: Logger) {
        self.name = name
        self.pidFile = pidFile
        self.logger = logger
    }

    typealias Failure = ManagedChildFailure

    /// Starts `executable` (output appended to `log`) and records its pid.
    @discardableResult
    func spawn(_ executable: String, _ arguments: [String], log: String) throws -> pid_t {
        let pid: pid_t
        do { pid = try ProcessRunner.spawn(executable, arguments, log: log, newProcessGroup: true) } catch {
            throw Failure(description: "cannot start \(executable): errno \(error.errno)")
        }
        state.withLock { $0 = pid }
        try? "\(pid)\n".write(toFile: pidFile, atomically: true, encoding: .utf8)
        return pid
    }

    /// Whether the child still runs; once it has exited it is forgotten.
    var isRunning: Bool {
        state.withLock { current in
            guard let pid = current else { return false }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == 0 { return true }
            current = nil
            return false
        }
    }

    /// SIGTERM, then SIGKILL after 10 s; waits for the process off the cooperative pool.
    func stop() async {
        guard let pid = state.withLock({ current -> pid_t? in defer { current = nil }; return current }) else { return }
        defer { try? FileManager.default.removeItem(atPath: pidFile) }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            BlockingCall.detach("dev-infrastructure.\(name)-stop") {
                kill(pid, SIGTERM)
                var status: Int32 = 0
                for _ in 0..<100 {
                    if waitpid(pid, &status, WNOHANG) == pid { continuation.resume(); return }
                    usleep(100_000)
                }
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                continuation.resume()
            }
        }
    }

    deinit {
        if let pid = state.withLock({ $0 }) { kill(pid, SIGKILL) }
    }

    /// Stops the process an earlier run in this folder started and could not stop (it was
    /// killed): only a live one whose command line `isOurs` accepts (SIGTERM, SIGKILL after 10 s).
    /// - Returns: whether there was one.
    func stopLeftover(isOurs: ([String]) -> Bool) async -> Bool {
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
              let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0 else { return false }
        defer { try? FileManager.default.removeItem(atPath: pidFile) }
        guard let commandLine = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
        guard isOurs(commandLine.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }) else { return false }
        logger.warning("stopping the \(name) an earlier run in this folder left running", metadata: ["dev.pid": "\(pid)"])
        kill(pid, SIGTERM)
        for _ in 0..<100 {
            if !Self.isAlive(pid) { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        kill(pid, SIGKILL)
        for _ in 0..<50 where Self.isAlive(pid) { try? await Task.sleep(for: .milliseconds(100)) }
        return true
    }

    /// Whether a process that is not our child still runs: signal 0 reaches it and it is not
    /// a zombie waiting for its parent to reap it.
    private static func isAlive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = stat.lastIndex(of: ")") else { return true }
        return !stat[stat.index(after: end)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }
}

/// A development server (SeaweedFS, the nginx gateway) that could not be started or did not
/// come up: what to do about it, for the operator.
public struct ManagedChildFailure: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) {
        self.description = description
    }
}
