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

    /// `check-jsonschema` from PyPI (deploy/requirements-test.txt).
    static let checker: String? = {
        let candidates = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/check-jsonschema" }
            + ["/usr/local/bin/check-jsonschema", "/root/.pyenv/shims/check-jsonschema"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()
}
