import Auth
import BackboneTestSupport
import Foundation
import ObjectStore
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
        #expect((claims.exp ?? 0) - (claims.iat ?? 0) == 60, "valid for exactly the ttl")
        #expect(abs((claims.iat ?? 0) - Int64(Date().timeIntervalSince1970)) < 120, "issued now")
        #expect(throws: AuthError.self) { try JWTCodec(secret: "another-secret-0123456789abcdef").verify(outcome.stdout) }
    }

    @Test("token --anon prints the app's anon key: the same at every call, accepted only where anonymous clients are (the Realtime socket), refused as a user's token; with --user it is a usage error")
    func anonKey() async throws {
        let secret = "cli-test-secret-0123456789abcdef"
        let first = try await CLIProcess.run(["token", "--anon"], environment: ["JWT_SECRET": secret])
        let second = try await CLIProcess.run(["token", "--anon"], environment: ["JWT_SECRET": secret])
        #expect(first.status == 0 && first.stdout == second.stdout, "\(first.stderr)")
        let key = first.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let codec = JWTCodec(secret: secret)
        let claims = try codec.verify(key, acceptingAnonymous: true)
        #expect(claims.isAnonymous && claims.sub.isEmpty && (claims.exp ?? 0) > Int64(Date().timeIntervalSince1970) + 10 * 365 * 86_400)
        #expect(throws: AuthError.self) { try codec.verify(key) }
        let mixed = try await CLIProcess.run(["token", "--anon", "--user", "u"], environment: ["JWT_SECRET": secret])
        #expect(mixed.status == 2 && mixed.stderr.contains("--anon"), "\(mixed.stderr)")
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
        let offset = Integration.freePortOffset(for: DevStack.ports)
        let dev = try await DevStack.start(["--infra-only", "--port-offset", String(offset)])
        defer { dev.cleanUp() }
        let brokers = try #require(dev.value("KAFKA_BROKERS"))
        let database = try #require(dev.value("DATABASE_URL"))

        let metadata = try await CLIProcess.shell("kcat -L -b \(brokers) -m 10")
        #expect(metadata.status == 0, "\(metadata.output)")
        for topic in ["reading.events.v2", "reading.progress.v1", "room.transcode.requests.v1", "realtime.broadcasts.v1"] {
            #expect(metadata.output.contains("topic \"\(topic)\""), "\(topic) missing from \(metadata.output)")
        }
        let migrations = try await CLIProcess.shell("psql '\(database)' -At -c 'select version from schema_migrations'")
        #expect(migrations.status == 0, "\(migrations.output)")
        #expect(!migrations.output.split(separator: "\n").isEmpty)

        let status = await dev.interrupt()
        #expect(status == 0, "dev exit: \(String(describing: status))\n\(dev.log)")
    }

    @Test("dev killed with SIGKILL: its PostgreSQL and SeaweedFS stop with it, and the folder starts again at once; a SeaweedFS left by a stack whose watchdog died too is stopped by the next start; an S3 port in use is a clear error")
    func devRestartAfterKill() async throws {
        let offset = Integration.freePortOffset(for: DevStack.ports)
        let arguments = ["--infra-only", "--port-offset", String(offset)]
        let first = try await DevStack.start(arguments)
        defer { first.cleanUp() }
        func weedPID() throws -> pid_t? {
            pid_t(try String(contentsOfFile: first.home + "/seaweedfs/weed.pid", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let weed = try #require(try weedPID())
        let postmaster = try #require(try await first.postmasterPID())
        kill(first.process.processIdentifier, SIGKILL)
        _ = await first.exited.wait(timeout: .seconds(10))
        #expect(await Integration.eventually(timeout: .seconds(30), every: .milliseconds(100)) {
            kill(weed, 0) != 0 && kill(postmaster, 0) != 0
        }, "the killed stack's SeaweedFS and PostgreSQL stopped with it")
        #expect(DevStack.processes(mentioning: first.home).isEmpty, "\(DevStack.processes(mentioning: first.home))")

        let second = try await DevStack.start(arguments, home: first.home)
        defer { second.cleanUp() }
        let leftover = try #require(try weedPID())
        #expect(leftover != weed)
        // The stack and its watchdog both killed: the SeaweedFS stays, holding its port.
        kill(second.process.processIdentifier, SIGKILL)
        for pid in DevStack.processes(mentioning: first.home) where pid.commandLine.contains("dev-watchdog") { kill(pid.pid, SIGKILL) }
        _ = await second.exited.wait(timeout: .seconds(10))
        #expect(kill(leftover, 0) == 0, "nobody stopped that SeaweedFS")

        let third = try await DevStack.start(arguments, home: first.home)
        defer { third.cleanUp() }
        let replacement = try #require(try weedPID())
        #expect(replacement != leftover)
        #expect(third.log.contains("left running"), "\(third.log)")
        let endpoint = try #require(third.value("S3_ENDPOINT"))
        #expect(endpoint.hasSuffix(":\(8333 + offset)"))
        _ = try await third.objectStore().list(prefix: "")
        #expect(await Integration.eventually(timeout: .seconds(15), every: .milliseconds(100)) { kill(leftover, 0) != 0 },
                "the leftover SeaweedFS was stopped")

        // Another stack on the same ports: refused, naming the port, instead of borrowing this one's store.
        let other = CLIProcess.emptyHome()
        defer { try? FileManager.default.removeItem(atPath: other) }
        let refused = try await CLIProcess.run(["dev"] + arguments, environment: ["BACKBONE_HOME": other])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("port \(8333 + offset)") && refused.stderr.contains("in use"), "\(refused.stderr)")
        #expect(await Integration.eventually(timeout: .seconds(30), every: .milliseconds(100)) {
            DevStack.processes(mentioning: other).isEmpty
        }, "a failed start leaves nothing running: \(DevStack.processes(mentioning: other).map(\.commandLine))")

        #expect(await third.interrupt() == 0, "\(third.log)")
        #expect(kill(replacement, 0) != 0, "Ctrl-C stops its SeaweedFS")
    }

    @Test("dev stopped by Ctrl-C, SIGTERM or SIGKILL at any moment of its start (servers starting, migrations and recovery, services starting, serving) leaves no process of its folder running")
    func devStoppedWhileStarting() async throws {
        let offset = Integration.freePortOffset(for: DevStack.ports)
        let home = CLIProcess.emptyHome()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let moments: [(signal: Int32, after: Duration)] = [
            (SIGINT, .milliseconds(150)), (SIGINT, .milliseconds(900)), (SIGINT, .milliseconds(1800)), (SIGTERM, .milliseconds(1200)),
            (SIGKILL, .milliseconds(1500)), (SIGINT, .seconds(6)),
        ]
        for (signal, after) in moments {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Integration.executable("backbone"))
            process.arguments = ["dev", "--port-offset", String(offset)]
            process.environment = CLIProcess.environment(["BACKBONE_HOME": home, "LOG_LEVEL": "warning"])
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            let exited = ExitWatch()
            process.terminationHandler = { exited.finish($0.terminationStatus) }
            try process.run()
            try await Task.sleep(for: after)
            kill(process.processIdentifier, signal)
            #expect(await exited.wait(timeout: .seconds(60)) != nil, "signal \(signal) after \(after): still running")
            let gone = await Integration.eventually(timeout: .seconds(60), every: .milliseconds(200)) {
                DevStack.processes(mentioning: home).isEmpty
            }
            #expect(gone, "signal \(signal) after \(after): left \(DevStack.processes(mentioning: home).map(\.commandLine))")
        }
    }

    @Test("dev started again in the same folder while it runs refuses, naming the running one, and leaves it working; after Ctrl-C the folder starts again")
    func devTwiceInOneFolder() async throws {
        let offset = Integration.freePortOffset(for: DevStack.ports)
        let arguments = ["--infra-only", "--port-offset", String(offset)]
        let first = try await DevStack.start(arguments)
        defer { first.cleanUp() }
        let settings = try String(contentsOfFile: first.home + "/dev.env", encoding: .utf8)
        let weed = try String(contentsOfFile: first.home + "/seaweedfs/weed.pid", encoding: .utf8)

        let second = try await CLIProcess.run(["dev"] + arguments, environment: ["BACKBONE_HOME": first.home])
        #expect(second.status == 1)
        #expect(second.stderr.contains("another backbone dev is running in this folder (pid \(first.process.processIdentifier))"),
                "\(second.stderr)")
        // The first stack's servers and settings are untouched.
        #expect(try String(contentsOfFile: first.home + "/dev.env", encoding: .utf8) == settings)
        #expect(try String(contentsOfFile: first.home + "/seaweedfs/weed.pid", encoding: .utf8) == weed)
        let database = try #require(first.value("DATABASE_URL"))
        let alive = try await CLIProcess.shell("psql '\(database)' -At -c 'select 1'")
        #expect(alive.output.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "\(alive.output)")
        _ = try await first.objectStore().list(prefix: "")
        #expect(await first.interrupt() == 0, "\(first.log)")

        let again = try await DevStack.start(arguments, home: first.home)
        defer { again.cleanUp() }
        #expect(await again.interrupt() == 0, "\(again.log)")
    }

    @Test("dev honours CORS_ALLOWED_ORIGINS as the services do: a preflight from a listed origin is answered with it, on the one origin and on a service's port, another origin gets no CORS headers; dev.env carries the list; a value that is no origin is refused before anything starts")
    func devCORSOrigins() async throws {
        let offset = Integration.freePortOffset(for: DevStack.ports)
        let other = CLIProcess.emptyHome()
        defer { try? FileManager.default.removeItem(atPath: other) }
        let refused = try await CLIProcess.run(["dev", "--port-offset", String(offset)],
                                               environment: ["BACKBONE_HOME": other, "CORS_ALLOWED_ORIGINS": "remix.example.com"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("CORS_ALLOWED_ORIGINS") && refused.stderr.contains("\"remix.example.com\" is not an origin"),
                "\(refused.stderr)")

        let origins = "https://remix.example.com,http://localhost:5173"
        let dev = try await DevStack.start(["--port-offset", String(offset)], environment: ["CORS_ALLOWED_ORIGINS": origins])
        defer { dev.cleanUp() }
        #expect(dev.value("CORS_ALLOWED_ORIGINS") == origins)
        var bases = [try #require(dev.value("INGEST_URL"), "\(dev.log)")]
        if let app = dev.value("APP_BASE_URL") { bases.append(app) }
        for base in bases {
            func preflight(_ origin: String) async throws -> String {
                try await CLIProcess.shell(
                    "curl -s -o /dev/null -w '%{http_code} %header{access-control-allow-origin}' -X OPTIONS "
                        + "-H 'Origin: \(origin)' -H 'Access-Control-Request-Method: POST' "
                        + "-H 'Access-Control-Request-Headers: authorization, apikey, content-type' \(base)/functions/v1/upload-init").output
            }
            #expect(try await preflight("https://remix.example.com") == "204 https://remix.example.com", "\(base)")
            #expect(try await preflight("http://localhost:5173") == "204 http://localhost:5173", "\(base)")
            #expect(try await preflight("https://elsewhere.example.com") == "204 ", "\(base): no Access-Control-Allow-Origin")
        }
        #expect(await dev.interrupt() == 0, "\(dev.log.suffix(2000))")
    }

    @Test("demo against a running dev stack shows accepted and duplicate events, progress, continue, summary, and the room's stages and ready arriving over the WebSocket")
    func demoAgainstDevStack() async throws {
        let offset = Integration.freePortOffset(for: DevStack.ports)
        let dev = try await DevStack.start(["--port-offset", String(offset)])
        defer { dev.cleanUp() }
        let outcome = try await CLIProcess.run(["demo"], environment: ["BACKBONE_HOME": dev.home])
        #expect(outcome.status == 0, "\(outcome.stderr)\n\(dev.log)")
        #expect(outcome.stdout.contains("accepted 3, duplicates 0, rejected 0"))
        #expect(outcome.stdout.contains("accepted 0, duplicates 2, rejected 0"))
        #expect(outcome.stdout.contains("\"status\" : \"in_progress\""))
        #expect(outcome.stdout.contains("\"type\" : \"material\""))
        #expect(outcome.stdout.contains("\"status\" : \"completed\""))
        #expect(outcome.stdout.contains("\"materialsCompleted\" : 1"))
        #expect(outcome.stdout.contains("POST /rooms/versions") && outcome.stdout.contains("\"status\" : \"queued\""))
        // Flow A to the end, over the WebSocket: every stage of the transcode worker on the
        // room's channel, in order, then ready naming the uploaded version; the catch-up query after.
        let lines = outcome.lines
        let upload = try #require(lines.first { $0.hasPrefix("== POST /rooms/uploads → 201") }, "\(outcome.stdout)")
        let version = try #require(upload.split(separator: " ").last.map { String($0.dropLast()) })
        let room = try #require(upload.components(separatedBy: "(room ").last?.components(separatedBy: ",").first)
        #expect(lines.contains("== realtime: joined room:\(room) (from its first event)"), "\(outcome.stdout.suffix(3000))")
        let channel = lines.filter { $0.hasPrefix("== room:\(room) ") }
        let stages = channel.compactMap { line -> String? in
            guard line.contains(" transcode_progress transcoding (") else { return nil }
            return line.components(separatedBy: "(").dropFirst().first?.components(separatedBy: ")").first
        }
        #expect(stages == ["downloading", "validating", "parsing", "layering", "exporting", "thumbnail"], "\(channel)")
        #expect(channel.first?.contains("transcode_progress queued") == true, "\(channel)")
        #expect(channel.last?.contains(" ready version_id \(version)") == true, "\(channel)")
        let sequences: [String] = channel.map { line in
            let tail: String = line.components(separatedBy: "  #").last ?? ""
            return tail.split(separator: " ").first.map(String.init) ?? ""
        }
        let expected: [String] = (1...max(1, channel.count)).map { String($0) }
        #expect(sequences == expected, "channel sequences 1, 2, 3, … with no gap: \(channel)")
        #expect(outcome.stdout.contains("(the catch-up query) → 200: ready"))
        #expect(outcome.stdout.contains("== grade ") && outcome.stdout.contains("walls"))
        #expect(lines.contains { $0.hasPrefix("   layers/walls.glb") && $0.contains("http://127.0.0.1:") })
        #expect(await dev.interrupt() == 0)
    }
}

/// `backbone dev` as a child process with its own `BACKBONE_HOME` under /tmp and no
/// `DATABASE_URL` (so it starts a private PostgreSQL there), up once `dev.env` exists.
final class DevStack {
    let home: String
    let process: Process
    let exited: ExitWatch
    let values: [String: String]

    var logPath: String { home + "-dev.log" }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func value(_ key: String) -> String? { values[key] }

    /// The stack's S3 store, from the settings it wrote.
    func objectStore() throws -> S3ObjectStore {
        func setting(_ key: String) throws -> String {
            guard let value = values[key] else { throw CommandFailure(message: "dev.env has no \(key)") }
            return value
        }
        return S3ObjectStore(configuration: S3Configuration(
            endpoint: try setting("S3_ENDPOINT"), region: try setting("S3_REGION"), bucket: try setting("S3_BUCKET"),
            accessKeyId: try setting("S3_ACCESS_KEY_ID"), secretAccessKey: try setting("S3_SECRET_ACCESS_KEY")))
    }

    private init(home: String, process: Process, exited: ExitWatch, values: [String: String]) {
        self.home = home
        self.process = process
        self.exited = exited
        self.values = values
    }

    /// The ports `backbone dev` listens on before `--port-offset`: the services' (8080–8084)
    /// the gateway's (8000) and the object store's (8333).
    static let ports = [8000, 8080, 8081, 8082, 8083, 8084, 8333, 9999]

    /// Starts `backbone dev` with `arguments` in `home` (a new empty folder when nil).
    static func start(_ arguments: [String], home: String? = nil, environment: [String: String] = [:]) async throws -> DevStack {
        let home = home ?? CLIProcess.emptyHome()
        let envPath = home + "/dev.env"
        try? FileManager.default.removeItem(atPath: envPath)  // an earlier run's: up once this one writes it
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Integration.executable("backbone"))
        process.arguments = ["dev"] + arguments
        process.environment = CLIProcess.environment(["BACKBONE_HOME": home, "LOG_LEVEL": "warning"].merging(environment) { $1 })
        let log = home + "-dev.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        // One handle for both, so the banner (stdout) and the log lines (stderr) share an offset
        // instead of overwriting each other.
        let output = FileHandle(forWritingAtPath: log)
        process.standardOutput = output
        process.standardError = output
        let exited = ExitWatch()
        process.terminationHandler = { exited.finish($0.terminationStatus) }
        try process.run()
        let ready = await Integration.eventually(timeout: .seconds(90), every: .milliseconds(250)) {
            FileManager.default.fileExists(atPath: envPath) || exited.code != nil
        }
        guard ready, exited.code == nil else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            throw CommandFailure(message: "backbone dev did not come up: " + ((try? String(contentsOfFile: log, encoding: .utf8)) ?? ""))
        }
        var values: [String: String] = [:]
        for line in try String(contentsOfFile: envPath, encoding: .utf8).split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { values[parts[0]] = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "'")) }
        }
        return DevStack(home: home, process: process, exited: exited, values: values)
    }

    /// The process id of the stack's private PostgreSQL (its data directory's `postmaster.pid`).
    func postmasterPID() async throws -> pid_t? {
        let database = try #require(value("DATABASE_URL"))
        let directory = try await CLIProcess.shell("psql '\(database)' -At -c 'show data_directory'")
        let pidFile = directory.output.trimmingCharacters(in: .whitespacesAndNewlines) + "/postmaster.pid"
        return (try? String(contentsOfFile: pidFile, encoding: .utf8))?.split(separator: "\n").first.flatMap { pid_t($0) }
    }

    /// The processes whose command line names `folder` (a stack's servers and watchdog name its folder).
    static func processes(mentioning folder: String) -> [(pid: pid_t, commandLine: String)] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry in
            guard let pid = pid_t(entry), let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { return nil }
            let commandLine = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.joined(separator: " ")
            return commandLine.contains(folder) ? (pid, commandLine) : nil
        }
    }

    /// SIGINT (Ctrl-C), then the exit status within 30 s (nil: still running).
    func interrupt() async -> Int32? {
        kill(process.processIdentifier, SIGINT)
        return await exited.wait(timeout: .seconds(30))
    }

    /// Stops the stack as Ctrl-C does (so its PostgreSQL and SeaweedFS stop with it), killing
    /// it only when that takes over 30 s, and removes its folder.
    func cleanUp() {
        if process.isRunning {
            kill(process.processIdentifier, SIGINT)
            for _ in 0..<300 where process.isRunning { usleep(100_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        try? FileManager.default.removeItem(atPath: logPath)
        try? FileManager.default.removeItem(atPath: home)
    }
}

struct CommandFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// The exit status of a child process, awaited with a timeout (nil: still running).
final class ExitWatch: Sendable {
    private let status = Mutex<Int32?>(nil)

    func finish(_ code: Int32) { status.withLock { $0 = code } }

    /// The exit status, or nil while the process runs.
    var code: Int32? { status.withLock { $0 } }

    func wait(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let code = status.withLock({ $0 }) { return code }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return status.withLock { $0 }
    }
}
