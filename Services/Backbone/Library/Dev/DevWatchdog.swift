import DevInfrastructure
import Foundation
import ServiceLogging
import Synchronization

/// Stops the servers of `backbone dev` (its private PostgreSQL, SeaweedFS and gateway) however the
/// stack ends: a Ctrl-C or SIGTERM while it starts, before it handles signals; a failed start;
/// a `kill -9`.
///
/// At the start of `dev`, before any server, the stack starts a second `backbone` process, the
/// watchdog (`backbone dev-watchdog FOLDER`), in a process group of its own (a Ctrl-C in the
/// terminal does not reach it) and ignoring the stop signals. Its standard input is a pipe whose
/// only write end this process holds (close-on-exec, so no server inherits it): the kernel closes
/// it when this process ends, whatever ends it. A stack that stopped its servers itself says
/// `stopped` first, and the watchdog leaves; otherwise it stops what the folder still runs — the
/// SeaweedFS of its pid file, the PostgreSQL of its data directory — and leaves. It holds the
/// folder's lock meanwhile, so a new start in the folder waits for it instead of reusing a server
/// that is about to stop.
enum DevWatchdog {
    private static let lifeline = Mutex<Int32?>(nil)

    /// Starts the watchdog of the dev folder `home`, handing it the folder's lock (`lockDescriptor`).
    static func start(home: String, lockDescriptor: Int32, logger: Logger) throws {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw CommandError(code: .io, message: "cannot make the watchdog's pipe: \(String(cString: strerror(errno)))")
        }
        // No child of this process may hold the write end (its end is this process's end).
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        do {
            let pid = try ProcessRunner.spawn(executable, ["dev-watchdog", home], standardInput: fds[0],
                                              inherited: [(from: lockDescriptor, to: 3)], newProcessGroup: true)
            logger.debug("dev watchdog started", metadata: ["watchdog.pid": "\(pid)"])
        } catch {
            close(fds[0]); close(fds[1])
            throw CommandError(code: .io, message: "cannot start the dev watchdog: errno \(error.errno)", context: executable)
        }
        close(fds[0])
        lifeline.withLock { $0 = fds[1] }
    }

    /// The stack stopped its servers itself: the watchdog leaves without touching anything.
    static func release() {
        guard let fd = lifeline.withLock({ current -> Int32? in defer { current = nil }; return current }) else { return }
        let word = Array("stopped\n".utf8)
        _ = word.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    /// The watchdog itself: waits for the stack to end, then stops what it left.
    static func run(_ arguments: [String], logger: Logger) async -> Int32 {
        guard let home = arguments.first else { return 64 }
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE] { Glibc.signal(signal, SIG_IGN) }
        var said: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(0, &byte, 1)
            if count == 1 { said.append(byte); if byte == UInt8(ascii: "\n") { break } else { continue } }
            if count < 0 && errno == EINTR { continue }
            break
        }
        if String(decoding: said, as: UTF8.self) == "stopped\n" { return 0 }
        logger.warning("backbone dev ended without stopping its servers; stopping them", metadata: ["dev.folder": "\(home)"])
        let seaweed = SeaweedFSServer(directory: home + "/seaweedfs", logger: logger)
        _ = await seaweed.stopLeftover(data: seaweed.directory + "/data")
        _ = await GatewayServer(directory: home + "/gateway", port: 0, upstreams: [:], logger: logger).stopLeftover()
        let postgres = PrivatePostgresCluster(directory: home + "/postgres", logger: logger)
        // A `pg_ctl start` the stack had under way goes on without it: the server it brings up
        // is stopped once it is there.
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline, runningCommandLines().contains(where: { $0.contains("pg_ctl") && $0.contains(postgres.dataDirectory) }) {
            try? await Task.sleep(for: .milliseconds(100))
        }
        if FileManager.default.fileExists(atPath: postgres.dataDirectory + "/postmaster.pid") { await postgres.stop() }
        return 0
    }

    /// The command lines of the processes this one can see, arguments joined by spaces.
    private static func runningCommandLines() -> [String] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> String? in
            guard Int32(entry) != nil, let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { return nil }
            return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.joined(separator: " ")
        }
    }
}
