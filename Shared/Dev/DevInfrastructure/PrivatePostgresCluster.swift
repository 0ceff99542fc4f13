import Foundation
import Postgres
import ServiceLogging
import Synchronization

/// A throwaway PostgreSQL cluster run from the distribution's binaries (`backbone dev`,
/// tests): `initdb` on first use, `pg_ctl start` listening on 127.0.0.1 only, with its
/// unix socket in the data directory. As root, the binaries run as the `postgres` system
/// user (created if missing), because initdb refuses to run as root; when that user cannot
/// reach the given directory (a clone under `/root`, mode 0700), the cluster lives in
/// `/var/tmp/backbone-postgres-…` instead, recorded in the directory (`cluster-location`), so it
/// survives restarts and belongs to that folder alone: a folder deleted and cloned again at the
/// same path gets a new, empty cluster, not the deleted folder's data.
public final class PrivatePostgresCluster: Sendable {
    /// The directory given at init.
    public let directory: String
    /// Where the cluster lives: `directory`, or (as root, when the postgres user cannot reach
    /// `directory`) a per-directory folder under `/var/tmp`. Holds `data` and `postgres.log`.
    public let clusterDirectory: String
    /// The database `start()` creates and points its URL at.
    public let database: String
    private let requestedPort: Int?
    private let logger: Logger
    private let runningPort = Mutex<Int?>(nil)

    static let systemUser = "postgres"

    public init(directory: String, port: Int? = nil, database: String = "backbone", logger: Logger) {
        self.directory = directory
        self.clusterDirectory = geteuid() == 0 && !Self.reachableByOthers(directory) ? Self.relocation(of: directory) : directory
        self.requestedPort = port
        self.database = database
        var logger = logger
        logger[metadataKey: "pg.cluster"] = clusterDirectory
        self.logger = logger
    }

    public var dataDirectory: String { clusterDirectory + "/data" }
    var logFile: String { clusterDirectory + "/postgres.log" }

    /// The port the cluster listens on once started.
    public var port: Int? { runningPort.withLock { $0 } }

    /// Initialises (if needed) and starts the cluster, creates the database if missing,
    /// and returns `postgres://postgres@127.0.0.1:PORT/DATABASE`.
    /// `DATABASE_URL` when it is set; otherwise a private cluster started in a temporary
    /// directory named after `name`, returned so the caller can stop it.
    public static func fromEnvironmentOrPrivate(_ name: String, logger: Logger) async throws
        -> (url: String, cluster: PrivatePostgresCluster?) {
        if let given = ProcessInfo.processInfo.environment["DATABASE_URL"] { return (given, nil) }
        let cluster = PrivatePostgresCluster(directory: NSTemporaryDirectory() + "\(name)-\(getpid())", logger: logger)
        return (try await cluster.start(), cluster)
    }

    public func start() async throws -> String {
        guard database.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }), !database.isEmpty else {
            throw failure("database name must be letters, digits and underscores")
        }
        let binaries = try PostgresBinaries.locate()
        try await prepareDirectory()
        if !FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION") {
            try await initialise(binaries)
        }
        let port = try await startServer(binaries)
        runningPort.withLock { $0 = port }
        try await createDatabaseIfMissing(port: port)
        let url = "postgres://postgres@127.0.0.1:\(port)/\(database)"
        logger.info("private postgres cluster ready", metadata: ["pg.url": url])
        return url
    }

    /// Stops the cluster (`pg_ctl stop -m fast`); errors are logged, not thrown.
    public func stop() async {
        guard let binaries = try? PostgresBinaries.locate() else { return }
        let outcome = await ProcessRunner.run(binaries.pgCtl, ["-D", dataDirectory, "-m", "fast", "-w", "stop"],
                                              as: Self.systemUser)
        runningPort.withLock { $0 = nil }
        if outcome.succeeded {
            logger.info("private postgres cluster stopped")
        } else {
            logger.warning("private postgres cluster stop failed", metadata: ["pg.output": Self.tail(outcome.output)])
        }
    }

    /// `pg_ctl restart -m immediate`: the server is killed without a checkpoint and recovers
    /// from its WAL on the same port (the fault suite's crash of PostgreSQL mid-stream). The
    /// server logs to the cluster's log file: were its output left on pg_ctl's, the pipe that
    /// collects it would never reach its end.
    public func restartImmediately() async throws {
        let binaries = try PostgresBinaries.locate()
        let outcome = await ProcessRunner.run(binaries.pgCtl, ["-D", dataDirectory, "-l", logFile, "-m", "immediate", "-w", "-t", "60", "restart"],
                                              as: Self.systemUser)
        guard outcome.succeeded else { throw failure("pg_ctl restart failed", output: outcome.output) }
        logger.info("private postgres cluster restarted (immediate)")
    }

    // MARK: - Steps

    private func prepareDirectory() async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        guard geteuid() == 0 else { return }
        if clusterDirectory != directory {
            logger.info("the postgres user cannot reach the project directory; the private cluster lives elsewhere",
                        metadata: ["pg.directory": clusterDirectory])
            try Self.refuseForeign(clusterDirectory)
            try FileManager.default.createDirectory(atPath: clusterDirectory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            try (clusterDirectory + "\n").write(toFile: directory + "/" + Self.locationFile, atomically: true, encoding: .utf8)
        }
        if getpwnam(Self.systemUser) == nil {
            let created = await ProcessRunner.run("/usr/sbin/useradd", ["--system", "--user-group", "--no-create-home",
                                                                        "--shell", "/usr/sbin/nologin", Self.systemUser])
            guard created.succeeded else { throw failure("cannot create the postgres user", output: created.output) }
        }
        guard let entry = getpwnam(Self.systemUser) else { throw failure("the postgres user does not exist") }
        guard chown(clusterDirectory, entry.pointee.pw_uid, entry.pointee.pw_gid) == 0 else {
            throw failure("cannot hand \(clusterDirectory) to the postgres user")
        }
    }

    private func initialise(_ binaries: PostgresBinaries) async throws {
        logger.info("initialising private postgres cluster")
        let outcome = await ProcessRunner.run(binaries.initdb, [
            "-D", dataDirectory, "--auth=trust", "-U", "postgres", "--encoding=UTF8", "--no-locale",
        ], as: Self.systemUser)
        guard outcome.succeeded else { throw failure("initdb failed", output: outcome.output) }
    }

    /// Starts the server, reusing one already running for this data directory when it
    /// listens on an acceptable port; removes a stale `postmaster.pid` after a crash.
    private func startServer(_ binaries: PostgresBinaries) async throws -> Int {
        let pidFile = dataDirectory + "/postmaster.pid"
        if FileManager.default.fileExists(atPath: pidFile) {
            let status = await ProcessRunner.run(binaries.pgCtl, ["-D", dataDirectory, "status"], as: Self.systemUser)
            if status.succeeded, let running = Self.portInPIDFile(pidFile), requestedPort == nil || requestedPort == running {
                logger.info("reusing running private postgres cluster", metadata: ["pg.port": String(running)])
                return running
            } else if status.succeeded {
                await stop()
            } else {
                logger.warning("removing stale postmaster.pid")
                try? FileManager.default.removeItem(atPath: pidFile)
            }
        }
        guard let port = requestedPort ?? LoopbackPort.free() else {
            throw PostgresError(code: .clusterFailed, message: "cannot find a free port on 127.0.0.1")
        }
        let socket = dataDirectory + "/.s.PGSQL.\(port)"
        // Unix socket paths are limited to 107 bytes; a deeper directory gets TCP only.
        let socketDirectory = socket.utf8.count < 100 ? dataDirectory : ""
        let options = "-p \(port) -k '\(socketDirectory)' -c listen_addresses=127.0.0.1"
        let outcome = await ProcessRunner.run(binaries.pgCtl, [
            "-D", dataDirectory, "-l", logFile, "-w", "-t", "60", "-o", options, "start",
        ], as: Self.systemUser)
        guard outcome.succeeded else {
            let log = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
            throw failure("pg_ctl start failed", output: outcome.output + "\n" + Self.tail(log))
        }
        logger.info("private postgres cluster started", metadata: ["pg.port": String(port)])
        return port
    }

    private func createDatabaseIfMissing(port: Int) async throws {
        let configuration = PostgresConfiguration(url: "postgres://postgres@127.0.0.1:\(port)/postgres",
                                                  applicationName: "backbone-cluster")
        let connection = try await PostgresConnection.connect(configuration: configuration, logger: logger)
        do {
            let existing = try await connection.query("SELECT 1 FROM pg_database WHERE datname = $1", [database])
            if existing.isEmpty {
                // The name was validated as [A-Za-z0-9_]+ in start().
                do {
                    try await connection.runScript("CREATE DATABASE \"\(database)\"")
                } catch where error.sqlState == "42P04" {
                    // Created concurrently by another starter: fine.
                }
            }
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
    }

    // MARK: - Where the cluster lives

    /// True when every existing ancestor of `path` (and `path` itself, if it exists) lets
    /// other users traverse it, so the postgres user can reach a folder created inside.
    package static func reachableByOthers(_ path: String) -> Bool {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var prefix = ""
        for component in absolute.split(separator: "/") {
            prefix += "/" + component
            var info = stat()
            guard stat(prefix, &info) == 0 else { return true }  // the rest is created by us, traversable
            if info.st_mode & S_IXOTH == 0 { return false }
        }
        return true
    }

    /// The file in `directory` naming where its relocated cluster lives.
    static let locationFile = "cluster-location"
    static let relocationPrefix = "/var/tmp/backbone-postgres-"

    /// Where the cluster of `directory` lives when the postgres user cannot reach it: the
    /// location recorded there; for a folder used before locations were recorded (the folder
    /// exists, and so does the cluster named by its path), that one; otherwise a new one, named
    /// by the path and a random suffix — so a deleted folder's cluster is never taken over by a
    /// new folder at the same path.
    static func relocation(of directory: String) -> String {
        if let recorded = try? String(contentsOfFile: directory + "/" + locationFile, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines),
           recorded.hasPrefix(relocationPrefix), !recorded.contains("/..") {
            return recorded
        }
        let absolute = directory.hasPrefix("/") ? directory : FileManager.default.currentDirectoryPath + "/" + directory
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in absolute.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        let byPath = relocationPrefix + String(repeating: "0", count: 16 - hex.count) + hex
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isFolder), isFolder.boolValue,
           FileManager.default.fileExists(atPath: byPath + "/data/PG_VERSION") {
            return byPath
        }
        return byPath + "-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
    }

    /// A relocated directory that exists must be a real directory owned by root or postgres
    /// (not a symlink or another user's folder planted at the predictable name).
    static func refuseForeign(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        let postgres = getpwnam(systemUser)?.pointee.pw_uid
        guard info.st_mode & S_IFMT == S_IFDIR, info.st_uid == 0 || info.st_uid == postgres else {
            throw PostgresError(code: .clusterFailed,
                                message: "\(path) exists but is not a directory of root or postgres; remove it or set DATABASE_URL",
                                context: ["pg.cluster": path])
        }
    }

    // MARK: - Helpers

    private func failure(_ message: String, output: String = "") -> PostgresError {
        var context: [String: String] = ["pg.cluster": clusterDirectory]
        if !output.isEmpty { context["pg.output"] = Self.tail(output) }
        return PostgresError(code: .clusterFailed, message: message, context: context)
    }

    static func tail(_ text: String, lines: Int = 8) -> String {
        text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    /// Line 4 of postmaster.pid is the port.
    static func portInPIDFile(_ path: String) -> Int? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        return lines.count > 3 ? Int(lines[3].trimmingCharacters(in: .whitespaces)) : nil
    }
}
