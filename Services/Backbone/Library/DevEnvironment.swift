import Foundation

/// `.backbone/dev.env`: the shell-sourceable settings of a running dev stack
/// (`KAFKA_BROKERS`, `DATABASE_URL`, `JWT_SECRET`, one `*_URL` per service). Commands
/// such as `backbone token` fall back to it when the environment does not say.
struct DevEnvironment {
    static var directory: String {
        ProcessInfo.processInfo.environment["BACKBONE_HOME"] ?? FileManager.default.currentDirectoryPath + "/.backbone"
    }

    static var path: String { directory + "/dev.env" }

    static func write(_ values: [(String, String)], to path: String = DevEnvironment.path) throws {
        let text = "# Written by `backbone dev`; source it: set -a; . \(path); set +a\n"
            + values.map { "\($0.0)=\(shellQuote($0.1))" }.joined(separator: "\n") + "\n"
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    static func read(from path: String = DevEnvironment.path) -> [String: String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            var value = parts[1]
            if value.hasPrefix("'") && value.hasSuffix("'") && value.count >= 2 {
                value = String(value.dropFirst().dropLast()).replacingOccurrences(of: "'\\''", with: "'")
            }
            values[parts[0]] = value
        }
        return values
    }

    /// The process environment, completed by dev.env for keys it lacks.
    static func resolved() -> [String: String] {
        var values = read()
        for (key, value) in ProcessInfo.processInfo.environment { values[key] = value }
        return values
    }

    static func shellQuote(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
