import Foundation
import Logging
import Postgres

/// Progress of a long command (records done of a total, rate, time left), shown once it has
/// run for a second (quick runs stay quiet). On a terminal it
/// is one line on standard error, redrawn in place; otherwise a JSON line on standard error
/// at most once a second (`{"progress":"replay","done":120,"total":500,"perSecond":340.2,
/// "secondsLeft":1.1}`), so standard output carries only results. Used by one task at a time.
final class CommandProgress {
    let label: String
    var total: Int?
    private(set) var done = 0
    private let interactive: Bool
    private let started = ContinuousClock.now
    private var lastReport: ContinuousClock.Instant?
    private var drewLine = false

    init(_ label: String, total: Int?, interactive: Bool = CommandOutput.isTerminal) {
        self.label = label
        self.total = total
        self.interactive = interactive
    }

    func advance(by count: Int = 1) {
        done += count
        let interval: Duration = interactive ? .milliseconds(200) : .seconds(1)
        if ContinuousClock.now - started < .seconds(1) { return }
        if let lastReport, ContinuousClock.now - lastReport < interval { return }
        lastReport = .now
        report()
    }

    /// The last report (if any was shown), then a newline on a terminal.
    func finish() {
        guard lastReport != nil else { return }
        report()
        if interactive && drewLine { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    var perSecond: Double {
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return seconds > 0 ? Double(done) / seconds : 0
    }

    var secondsLeft: Double? {
        guard let total, perSecond > 0 else { return nil }
        return Double(max(0, total - done)) / perSecond
    }

    private func report() {
        if interactive {
            var line = "\(label): \(done)"
            if let total { line += "/\(total)" }
            line += " records, \(Int(perSecond.rounded()))/s"
            if let left = secondsLeft { line += ", \(Self.duration(left)) left" }
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
            drewLine = true
        } else {
            var line = "{\"progress\":\(JSONString.quote(label)),\"done\":\(done)"
            if let total { line += ",\"total\":\(total)" }
            line += ",\"perSecond\":\((perSecond * 10).rounded() / 10)"
            if let left = secondsLeft { line += ",\"secondsLeft\":\((left * 10).rounded() / 10)" }
            FileHandle.standardError.write(Data((line + "}\n").utf8))
        }
    }

    static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.up))
        return whole < 60 ? "\(whole)s" : "\(whole / 60)m\(String(format: "%02d", whole % 60))s"
    }
}

/// How results are printed: a table for a person at a terminal, JSON lines for a script
/// (stdout not a terminal, or `--json`).
enum CommandOutput {
    static var isTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    static func wantsJSON(_ args: CommandLineArguments) -> Bool { args.flag("json") || !isTerminal }

    /// Columns padded to their widest cell; trailing blanks trimmed.
    static func table(_ cells: [[String]]) -> String {
        guard let columns = cells.map(\.count).max() else { return "" }
        let widths = (0..<columns).map { column in cells.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
        return cells.map { line in
            line.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }.joined(separator: "\n") + "\n"
    }

    /// `--help`: prints the command's help (with its example) and tells the caller to stop.
    static func help(_ arguments: [String], _ text: String) -> Bool {
        guard arguments.contains("--help") || arguments.contains("-h") else { return false }
        print(text)
        return true
    }
}

/// The database of the stored positions and replay records (`DATABASE_URL` from the
/// environment or `.backbone/dev.env`).
enum DatabaseSettings {
    /// Runs `body` with a client of `DATABASE_URL`, closed on every path; database errors
    /// name the fix (see `guarded`).
    static func with<T>(applicationName: String, logger: Logger, _ body: (PostgresClient) async throws -> T) async throws -> T {
        let client = try client(applicationName: applicationName, logger: logger)
        do {
            let result = try await guarded(client) { try await body(client) }
            await client.close()
            return result
        } catch {
            await client.close()
            throw error
        }
    }

    static func client(applicationName: String, logger: Logger) throws -> PostgresClient {
        guard let url = DevEnvironment.resolved()["DATABASE_URL"], !url.isEmpty else {
            throw CommandLineArguments.UsageError(description: "DATABASE_URL is not set (export it, or start `backbone dev`)")
        }
        var quiet = logger
        if ProcessInfo.processInfo.environment["LOG_LEVEL"] == nil { quiet.logLevel = .critical }
        return PostgresClient(configuration: PostgresConfiguration(url: url, maxConnections: 2, applicationName: applicationName),
                              logger: quiet)
    }

    /// Runs `body`, turning a database that cannot be reached or lacks the tables into an
    /// error that names the fix.
    static func guarded<T>(_ client: PostgresClient, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PostgresError {
            if error.sqlState == "42P01" {
                throw CommandError(code: .databaseUnavailable,
                                   message: "the database has no projection tables yet — run `backbone migrate` (or start the services once)",
                                   context: "DATABASE_URL")
            }
            throw CommandError(code: .databaseUnavailable, message: "\(error) — is PostgreSQL running (start it with `backbone dev`)?",
                               context: "DATABASE_URL", isRetriable: error.isRetriable)
        }
    }
}
