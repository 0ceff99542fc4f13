import DevInfrastructure
import Foundation
import ObjectStore
import ServiceLogging

/// A private SeaweedFS for one integration test: started in a temporary folder, stopped
/// and removed on every exit path.
public enum SeaweedFSFixture {
    public static func with<T>(bucket: String = "rooms",
                               _ body: (S3Configuration) async throws -> T) async throws -> T {
        let directory = NSTemporaryDirectory() + "seaweedfs-\(UInt32.random(in: 0...UInt32.max))"
        let weed = SeaweedFSServer.locateWeed(Integration.packageRoot.appendingPathComponent(".venv/bin/weed").path)
        let server = SeaweedFSServer(directory: directory, bucket: bucket, weed: weed, logger: .disabled)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration: S3Configuration
        do { configuration = try await server.start() } catch {
            await server.stop()
            throw error
        }
        return try await withResource(configuration, release: { _ in await server.stop() }, body)
    }
}

/// The `curl` command line as the app's plain HTTP client: no SDK, no signing of its own.
public enum PlainHTTP {
    public struct Answer: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: String
    }

    /// Sends `method` to `url` with `headers`, the body read from `file` if given.
    public static func send(_ method: String, _ url: String, headers: [String: String] = [:],
                            file: String? = nil) async throws -> Answer {
        let headerFile = NSTemporaryDirectory() + "curl-headers-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: headerFile) }
        var arguments = ["-sS", "-X", method, "-D", headerFile, "-o", "-", "-w", "\n%{http_code}", "-H", "Expect:"]
        for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
        if let file { arguments += ["--data-binary", "@\(file)"] }
        arguments.append(url)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = await Task.detached { pipe.fileHandleForReading.readDataToEndOfFile() }.value
        process.waitUntilExit()
        var text = String(decoding: data, as: UTF8.self)
        let status = Int(text.split(separator: "\n").last ?? "") ?? 0
        if let newline = text.lastIndex(of: "\n") { text = String(text[..<newline]) }
        var parsed: [String: String] = [:]
        let raw = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
        for line in raw.split(separator: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            parsed[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Answer(status: status, headers: parsed, body: text)
    }
}

/// boto3, the AWS SDK for Python, as an independent witness of what the bucket holds.
public enum Boto3Witness {
    /// Runs `script` (Python, with `s3`, a boto3 client of the store, and `bucket` defined) with
    /// `arguments` as `sys.argv[1...]`; returns what it printed.
    public static func run(_ script: String, _ configuration: S3Configuration, arguments: [String] = []) async throws -> String {
        let venvPython = Integration.packageRoot.appendingPathComponent(".venv/bin/python3").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: FileManager.default.isExecutableFile(atPath: venvPython) ? venvPython : "/usr/bin/python3")
        process.arguments = ["-c", """
            import boto3, os, sys
            s3 = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"], region_name=os.environ["S3_REGION"],
                              aws_access_key_id=os.environ["S3_ACCESS_KEY_ID"], aws_secret_access_key=os.environ["S3_SECRET_ACCESS_KEY"])
            bucket = os.environ["S3_BUCKET"]
            """ + "\n" + script] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(configuration.environment) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = await Task.detached { pipe.fileHandleForReading.readDataToEndOfFile() }.value
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ObjectStoreError(code: .invalidResponse, message: "the boto3 witness failed (exit \(process.terminationStatus))")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Every key under `prefix` (all pages).
    public static func keys(_ configuration: S3Configuration, prefix: String) async throws -> [String] {
        try await run("""
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=sys.argv[1]):
                for o in page.get("Contents", []):
                    print(o["Key"])
            """, configuration, arguments: [prefix]).split(separator: "\n").map(String.init)
    }
}
