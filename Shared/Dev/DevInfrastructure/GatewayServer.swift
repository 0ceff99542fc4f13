import Foundation
import ServiceLogging

/// The one origin of `backbone dev`: Debian's nginx running compose's gateway configuration
/// (`deploy/gateway/nginx.conf`, the same file) on loopback, in front of the services' own
/// ports — so an app pointed at one base URL reaches its functions, PostgREST, Realtime and our
/// own routes exactly as it does through compose's gateway.
public final class GatewayServer: Sendable {
    public let directory: String
    public let port: Int
    private let upstreams: [String: Int]
    private let child: ManagedChild
    private let logger: Logger

    /// `upstreams`: each service name the configuration routes to (`ingest`, …) and the
    /// loopback port it listens on here.
    public init(directory: String, port: Int, upstreams: [String: Int], logger: Logger) {
        self.directory = directory
        self.port = port
        self.upstreams = upstreams
        self.logger = logger
        self.child = ManagedChild(name: "gateway (nginx)", pidFile: directory + "/nginx.master.pid", logger: logger)
    }

    public typealias Failure = ManagedChildFailure

    /// nginx on the `PATH` or in /usr/sbin (where Debian puts it).
    public static func locateNginx() -> String? {
        ((ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/sbin"])
            .map { "\($0)/nginx" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// compose's gateway configuration: `BACKBONE_GATEWAY_CONF`, else `deploy/gateway/nginx.conf`
    /// in the current folder or above the executable (a checkout's `.build/…/backbone`).
    public static func locateConfiguration() -> String? {
        let relative = "deploy/gateway/nginx.conf"
        var candidates = [ProcessInfo.processInfo.environment["BACKBONE_GATEWAY_CONF"],
                          FileManager.default.currentDirectoryPath + "/" + relative].compactMap { $0 }
        var folder = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            candidates.append(folder.appendingPathComponent(relative).path)
            folder = folder.deletingLastPathComponent()
        }
        return candidates.first { FileManager.default.isReadableFile(atPath: $0) }
    }

    /// compose's configuration made to run on loopback from `directory`: it listens on
    /// 127.0.0.1:`port`, each `server NAME:PORT resolve;` (Docker's DNS, re-resolved) becomes
    /// the loopback port of `upstreams[NAME]`, and nginx's pid, logs and temporary files live
    /// in `directory`, in the foreground.
    public static func loopbackConfiguration(_ compose: String, port: Int, upstreams: [String: Int], directory: String,
                                             asRoot: Bool = geteuid() == 0) throws -> String {
        var config = compose.replacingOccurrences(of: #"(?m)^\s*resolver [^;]*;\s*$"#, with: "", options: .regularExpression)
        guard config.contains("listen 8000;") else { throw Failure(description: "the gateway configuration has no `listen 8000;`") }
        config = config.replacingOccurrences(of: "listen 8000;", with: "listen 127.0.0.1:\(port);")
        for (name, upstreamPort) in upstreams {
            config = config.replacingOccurrences(of: #"server \#(name):\d+ resolve;"#, with: "server 127.0.0.1:\(upstreamPort);",
                                                 options: .regularExpression)
        }
        if let left = config.range(of: #"server [a-z-]+:\d+ resolve;"#, options: .regularExpression) {
            throw Failure(description: "no loopback port for the gateway's upstream `\(config[left])`")
        }
        // Workers run as root only when the master does (nginx ignores `user` otherwise): the
        // default `nobody` could not reach a folder under a 0700 home such as /root.
        let header = (asRoot ? "user root;\n" : "") + "pid \(directory)/nginx.pid;\nerror_log \(directory)/error.log;\ndaemon off;\n"
        guard let events = config.range(of: "events {") else { throw Failure(description: "the gateway configuration has no `events` block") }
        config.insert(contentsOf: header, at: events.lowerBound)
        return config.replacingOccurrences(of: "http {", with: """
            http {
              access_log \(directory)/access.log; client_body_temp_path \(directory)/body; proxy_temp_path \(directory)/proxy;
              fastcgi_temp_path \(directory)/fastcgi; uwsgi_temp_path \(directory)/uwsgi; scgi_temp_path \(directory)/scgi;
            """)
    }

    /// Writes the configuration, checks it (`nginx -t`), starts nginx and waits (at most 10 s)
    /// until it listens; returns the origin's URL.
    public func start() async throws -> String {
        guard let nginx = Self.locateNginx() else { throw Failure(description: "nginx not found (deploy/dev.sh installs nginx-light)") }
        guard let source = Self.locateConfiguration() else {
            throw Failure(description: "deploy/gateway/nginx.conf not found: run from the checkout, or set BACKBONE_GATEWAY_CONF")
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        _ = await stopLeftover()
        guard LoopbackPort.probe(port) != nil else {
            throw Failure(description: "port \(port) for the gateway is in use on 127.0.0.1 (move this stack's ports: --port-offset N)")
        }
        let config = try Self.loopbackConfiguration(try String(contentsOfFile: source, encoding: .utf8), port: port,
                                                    upstreams: upstreams, directory: directory)
        let file = directory + "/nginx.conf"
        try config.write(toFile: file, atomically: true, encoding: .utf8)
        let log = directory + "/nginx.log"
        let check = await ProcessRunner.run(nginx, ["-t", "-q", "-c", file, "-p", directory])
        guard check.succeeded else { throw Failure(description: "nginx refused \(file): \(check.output)") }
        try child.spawn(nginx, ["-c", file, "-p", directory], log: log)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            guard child.isRunning else { throw Failure(description: "nginx exited during start; see \(directory)/error.log") }
            if LoopbackPort.probe(port) == nil { return "http://127.0.0.1:\(port)" }
            try await Task.sleep(for: .milliseconds(50))
        }
        await child.stop()
        throw Failure(description: "nginx did not listen on 127.0.0.1:\(port) within 10 s; see \(directory)/error.log")
    }

    public func stop() async { await child.stop() }

    /// Stops an nginx an earlier run in this folder left running (it was killed): its master's
    /// command line names this folder's configuration.
    package func stopLeftover() async -> Bool {
        let file = directory + "/nginx.conf"
        // nginx rewrites its title ("nginx: master process /usr/sbin/nginx -c FILE -p DIR").
        return await child.stopLeftover { arguments in
            let line = arguments.joined(separator: " ")
            return line.contains("nginx") && line.contains(file)
        }
    }
}
