import BlockingCalls
import Dispatch
import Foundation
import Postgres

/// Runs helper programs (initdb, pg_ctl, useradd, other local servers) to completion on threads of
/// their own (`BlockingCall`), so blocking reads and `waitpid` never hold a thread that runs tasks.
///
/// Uses `posix_spawn` + `waitpid` directly: Foundation's `Process.waitUntilExit` depends on
/// run-loop/SIGCHLD plumbing that can stall when called from a dispatch worker thread.
package enum ProcessRunner {
    package struct Outcome: Sendable {
        package var status: Int32
        package var output: String
        package var succeeded: Bool { status == 0 }
    }

    /// Runs `executable` with `arguments`; as root with `user` set, through `runuser -u user --`.
    /// `environment` entries are added to (or replace) the current environment.
    package static func run(_ executable: String, _ arguments: [String], as user: String? = nil,
                    environment: [String: String] = [:]) async -> Outcome {
        var launch = executable
        var launchArguments = arguments
        if let user, geteuid() == 0 {
            launch = runuserPath
            launchArguments = ["-u", user, "--", executable] + arguments
        }
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        let (path, args, env) = (launch, launchArguments, merged.map { "\($0.key)=\($0.value)" })
        return await BlockingCall.run("dev-infrastructure.process-runner") { runBlocking(path, args, env) }
    }

    private static func runBlocking(_ executable: String, _ arguments: [String], _ environment: [String]) -> Outcome {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return Outcome(status: -1, output: "pipe failed: errno \(errno)") }
        // Keep the pipe out of other children spawned concurrently (dup2 in the child clears it).
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
        // Nothing else of this process reaches the child. The embedded Kafka cluster's
        // sockets are not close-on-exec (librdkafka's mock accepts without it): a server
        // started from here (PostgreSQL by `pg_ctl`, and every backend it forks) would hold a
        // copy of each broker connection open at that moment, so a broker that closes one
        // (taken down, shut down) no longer disconnects its client, which then waits for an
        // answer that never comes (a consumer parked in JoinGroup: `max.poll.interval.ms`).
        closeInheritedDescriptors(&actions)

        var pid: pid_t = 0
        let spawned = CStringArray([executable] + arguments).withPointers { argv in
            CStringArray(environment).withPointers { envp in
                posix_spawn(&pid, executable, &actions, nil,
                            argv.map { UnsafeMutablePointer(mutating: $0) },
                            envp.map { UnsafeMutablePointer(mutating: $0) })
            }
        }
        close(fds[1])
        guard spawned == 0 else {
            close(fds[0])
            return Outcome(status: -1, output: "cannot launch \(executable): errno \(spawned)")
        }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
            if count > 0 {
                output.append(contentsOf: chunk[0..<count])
            } else if count < 0, errno == EINTR {
                continue
            } else {
                break
            }
        }
        close(fds[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exited = status & 0x7F == 0
        let code = exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Outcome(status: code, output: String(decoding: output, as: UTF8.self))
    }

    package struct SpawnError: Error { package var errno: Int32 }

    /// Starts `executable` and returns at once (the caller reaps it). Standard input is
    /// `standardInput` (else /dev/null), output goes to `log` (appended) or stays this process's;
    /// `inherited` maps descriptors of this process onto the child's (from 3 up); nothing else
    /// of this process reaches it. `newProcessGroup`: out of the terminal's foreground group, so
    /// a Ctrl-C there does not reach it.
    package static func spawn(_ executable: String, _ arguments: [String], log: String? = nil, standardInput: Int32? = nil,
                              inherited: [(from: Int32, to: Int32)] = [], newProcessGroup: Bool = false) throws(SpawnError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardInput {
            posix_spawn_file_actions_adddup2(&actions, standardInput, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if let log {
            posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        for (from, to) in inherited { posix_spawn_file_actions_adddup2(&actions, from, to) }
        // Like every server started next to the embedded broker: none of its sockets inherited.
        closeInheritedDescriptors(&actions, from: 3 + Int32(inherited.count))
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        if newProcessGroup {
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard result == 0 else { throw SpawnError(errno: result) }
        return pid
    }

    /// Adds "close every descriptor from 3 up" to `actions` (glibc's
    /// `posix_spawn_file_actions_addclosefrom_np`, looked up at run time: the Glibc module
    /// does not declare it); without it, marks this process's descriptors close-on-exec.
    package static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t, from first: Int32 = 3) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            let closeFrom = unsafeBitCast(symbol, to: CloseFrom.self)
            if closeFrom(&actions, first) == 0 { return }
        }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for fd in entries.compactMap({ Int32($0) }) where fd >= first {
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
    }

    static var runuserPath: String {
        ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"]
            .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/sbin/runuser"
    }
}
