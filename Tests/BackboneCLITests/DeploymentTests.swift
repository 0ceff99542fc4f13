import BackboneTestSupport
import Foundation
import Testing
@testable import BackboneCLI

/// docker-compose.yml cannot be run here (no Docker engine), so it is checked against the
/// Compose specification and against what `backbone dev` runs.
@Suite("Deployment files")
struct DeploymentTests {
    static let compose = Integration.packageRoot.appendingPathComponent("docker-compose.yml")

    @Test("docker-compose.yml validates against the Compose specification",
          .enabled(if: Self.checker != nil))
    func composeIsValid() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.checker!)
        process.arguments = ["--builtin-schema", "vendor.compose-spec", Self.compose.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
    }

    @Test("the compose file runs every service backbone dev runs, with its port and a health check")
    func composeMirrorsDev() throws {
        let text = try String(contentsOf: Self.compose, encoding: .utf8)
        for entry in ServiceCatalog.entries {
            // The service's block: from its key to the next top-level service key.
            let after = text.components(separatedBy: "\n  \(entry.name):\n").dropFirst().first ?? ""
            #expect(!after.isEmpty, "\(entry.name) is missing from docker-compose.yml")
            let block = after.components(separatedBy: "\n\n").first ?? after
            #expect(block.contains("HTTP_PORT: \"\(entry.defaultPort)\""), "\(entry.name) listens on \(entry.defaultPort)")
            #expect(block.contains("healthcheck:"), "\(entry.name) has a health check")
        }
        for infrastructure in ["kafka:", "postgres:", "topic-init:", "migrate:", "gateway:"] {
            #expect(text.contains("\n  \(infrastructure)\n"), "\(infrastructure) is in docker-compose.yml")
        }
    }

    @Test("the gateway answers the errors it raises itself in the services' JSON error shape",
          .enabled(if: Self.executable("nginx") != nil && Self.executable("curl") != nil))
    func gatewayErrorsAreJSON() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // The real config, on loopback ports; every upstream is a closed port (a service down).
        let port = Integration.freePort()
        var config = try String(contentsOf: Integration.packageRoot.appendingPathComponent("deploy/gateway/nginx.conf"), encoding: .utf8)
        config = config.replacingOccurrences(of: "listen 8000;", with: "listen 127.0.0.1:\(port);")
        for upstream in ["ingest:8080", "progress-projector:8081", "analytics-aggregator:8082", "transcode-worker:8083",
                         "realtime-notifier:8084"] {
            config = config.replacingOccurrences(of: "server \(upstream);", with: "server 127.0.0.1:\(Integration.freePort());")
        }
        let temp = directory.path
        config = config.replacingOccurrences(of: "events {}", with: "pid \(temp)/nginx.pid;\nerror_log \(temp)/error.log;\ndaemon off;\nevents {}")
        config = config.replacingOccurrences(of: "http {", with: """
            http {
              access_log off; client_body_temp_path \(temp); proxy_temp_path \(temp);
              fastcgi_temp_path \(temp); uwsgi_temp_path \(temp); scgi_temp_path \(temp);
            """)
        let file = directory.appendingPathComponent("nginx.conf")
        try config.write(to: file, atomically: true, encoding: .utf8)
        let nginx = Process()
        nginx.executableURL = URL(fileURLWithPath: Self.executable("nginx")!)
        nginx.arguments = ["-c", file.path, "-p", temp]
        try nginx.run()
        defer { nginx.terminate(); nginx.waitUntilExit() }

        let base = "http://127.0.0.1:\(port)"
        func fetch(_ arguments: [String]) throws -> String {
            let curl = Process()
            curl.executableURL = URL(fileURLWithPath: Self.executable("curl")!)
            curl.arguments = ["-s", "-i", "--max-time", "10"] + arguments
            let output = Pipe()
            curl.standardOutput = output
            try curl.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            curl.waitUntilExit()
            return text
        }
        // nginx is up once /healthz answers (it is served by the gateway itself).
        let up = try await Integration.eventually(timeout: .seconds(10)) { try fetch(["\(base)/healthz"]).hasPrefix("HTTP/1.1 200") }
        #expect(up, "nginx did not start")
        let body = directory.appendingPathComponent("body")
        try Data(count: 3_000_000).write(to: body)
        let cases: [(arguments: [String], status: String, code: String)] = [
            (["\(base)/no/such/route"], "404", "NOT_FOUND"),
            (["\(base)/learning/continue"], "503", "SERVICE_UNAVAILABLE"),
            (["\(base)/" + String(repeating: "a", count: 20_000)], "414", "URI_TOO_LONG"),
            (["-H", "X-Big: " + String(repeating: "b", count: 20_000), "\(base)/healthz"], "400", "BAD_REQUEST"),
            (["-X", "POST", "--data-binary", "@\(body.path)", "\(base)/learning/reading-events/batch"], "413", "PAYLOAD_TOO_LARGE"),
        ]
        for (arguments, status, code) in cases {
            let response = try fetch(arguments)
            #expect(response.hasPrefix("HTTP/1.1 \(status)"), "\(code): \(response.prefix(300))")
            #expect(response.contains("application/json") && response.contains(#"{"error":{"code":"\#(code)""#), "\(response.prefix(600))")
        }
        #expect(try fetch(["\(base)/learning/continue"]).contains("Retry-After: 5"))
    }

    /// `name` on the `PATH` or in one of `alsoIn` (nginx lives in /usr/sbin).
    static func executable(_ name: String, alsoIn extra: [String] = ["/usr/sbin", "/usr/bin"]) -> String? {
        ((ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + extra)
            .map { "\($0)/\(name)" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// `check-jsonschema` from PyPI (deploy/requirements-test.txt).
    static let checker: String? = executable("check-jsonschema", alsoIn: ["/usr/local/bin", "/root/.pyenv/shims"])
}
