import DevInfrastructure
import Foundation
import Kafka
import Postgres
import ServiceLogging

/// Shared by the integration suites: the switch that enables them, a fresh database per
/// suite, free ports, polling and child processes of the project's executables.
public enum Integration {
    /// `deploy/test.sh` (and so CI) sets `BACKBONE_INTEGRATION=1` and `TEST_DATABASE_URL`.
    public static var isEnabled: Bool { ProcessInfo.processInfo.environment["BACKBONE_INTEGRATION"] == "1" }

    public static var adminDatabaseURL: String {
        ProcessInfo.processInfo.environment["TEST_DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/postgres"
    }

    /// The repository root (where Package.swift is).
    public static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    }()

    /// The path of a witness script the suites share (`Tests/Support/Witnesses/NAME`).
    public static func witness(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Witnesses").appendingPathComponent(name).path
    }

    /// A built executable of this package (`swift build` puts them beside the test bundle).
    public static func executable(_ name: String) -> String {
        let bundle = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent(name).path
        if FileManager.default.isExecutableFile(atPath: bundle) { return bundle }
        for configuration in ["debug", "release"] {
            let path = packageRoot.appendingPathComponent(".build/\(configuration)/\(name)").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return packageRoot.appendingPathComponent(".build/debug/\(name)").path
    }

    /// A free TCP port on loopback.
    public static func freePort() -> Int { LoopbackPort.free() ?? 0 }

    /// A port free on loopback below the ephemeral range, for a server that must bind it again
    /// after a restart: a port from `freePort()` is in the range every outgoing connection draws
    /// from, and another test's socket can take it while the server is down (seen: a fault suite's
    /// transcode worker restarted after `kill -9` found its port taken, in the lanes of `.ci/run`).
    public static func stablePort() -> Int { freePortOffset(for: [0]) }

    /// An offset that moves every one of `ports` to a port free on loopback, all of them below
    /// the ephemeral range: `freePort()` and every outgoing connection draw from that range, so
    /// a block taken from it can lose one of its ports to another test's socket between this
    /// check and the service's bind (seen: `backbone dev --port-offset` with one port taken).
    public static func freePortOffset(for ports: [Int]) -> Int {
        let lowest = ports.min() ?? 0, span = (ports.max() ?? 0) - lowest
        for _ in 0..<200 {
            let base = Int.random(in: 10_000..<(30_000 - span))
            if ports.allSatisfy({ LoopbackPort.isFree(base + $0 - lowest) }) { return base - lowest }
        }
        return freePort() - lowest
    }

    /// Runs a program to completion (looked up on the PATH unless absolute, in `directory` when
    /// given): its exit status and its standard output and error together.
    public static func run(_ program: String, _ arguments: [String], in directory: URL? = nil) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program.hasPrefix("/") ? program : "/usr/bin/env")
        process.arguments = program.hasPrefix("/") ? arguments : [program] + arguments
        if let directory { process.currentDirectoryURL = directory }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Polls `condition` until it holds or `timeout` passes.
    public static func eventually(timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(100),
                                  _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: interval)
        }
        return try await condition()
    }
}

/// A database of its own for one suite, created from `TEST_DATABASE_URL` and dropped by `drop()`.
public struct TestDatabase: Sendable {
    public let name: String
    public let url: String

    public static func create(_ prefix: String) async throws -> TestDatabase {
        let name = "\(prefix)_\(UInt32.random(in: 0...UInt32.max))".lowercased()
        let admin = PostgresClient(configuration: PostgresConfiguration(url: Integration.adminDatabaseURL, maxConnections: 1), logger: .disabled)
        _ = try await admin.execute("CREATE DATABASE \(name)")
        await admin.close()
        return TestDatabase(name: name, url: replacingDatabase(in: Integration.adminDatabaseURL, with: name))
    }

    /// Runs `body` with a client of a database of its own, closed and dropped afterwards
    /// however `body` ends.
    public static func with<T>(_ prefix: String, maxConnections: Int = 8,
                               _ body: (PostgresClient) async throws -> T) async throws -> T {
        let database = try await create(prefix)
        return try await withResource(database.client(maxConnections: maxConnections), release: { client in
            await client.close()
            await database.drop()
        }, body)
    }

    public func client(maxConnections: Int = 8) -> PostgresClient {
        PostgresClient(configuration: PostgresConfiguration(url: url, maxConnections: maxConnections), logger: .disabled)
    }

    public func drop() async {
        let admin = PostgresClient(configuration: PostgresConfiguration(url: Integration.adminDatabaseURL, maxConnections: 1), logger: .disabled)
        _ = try? await admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        await admin.close()
    }

    static func replacingDatabase(in url: String, with name: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        components.path = "/" + name
        return components.string ?? url
    }
}

/// A child process of one of the project's executables, killable with SIGKILL.
public final class ServiceProcess: @unchecked Sendable {
    // @unchecked: `process` is only touched by the test that owns this object, sequentially.
    public let process: Process
    public let logPath: String

    public init(executable name: String, environment: [String: String]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: Integration.executable(name))
        var env = ProcessInfo.processInfo.environment
        env["LOG_LEVEL"] = env["TEST_SERVICE_LOG_LEVEL"] ?? "warning"
        // The tests' brokers are embedded ones: a service binds its positions to the broker's
        // address too, as under `backbone dev` (and as the test process and the commands do).
        env["KAFKA_CLUSTER_IDENTITY"] = EmbeddedKafkaCluster.clusterIdentity.rawValue
        for (key, value) in environment { env[key] = value }
        process.environment = env
        logPath = NSTemporaryDirectory() + "backbone-\(name)-\(UInt32.random(in: 0...UInt32.max)).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = FileHandle(forWritingAtPath: logPath)
        process.standardOutput = log
        process.standardError = log
        try process.run()
    }

    public var isRunning: Bool { process.isRunning }

    /// SIGKILL: no shutdown code runs.
    public func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// SIGTERM and wait.
    public func terminate() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    deinit { if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) } }
}
