import BackboneTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// The operator view against a running `backbone dev`: `backbone status` (its JSON document
/// and exit status), the services' `/metrics` through `promtool check metrics`, and Debian's
/// Prometheus evaluating every alert rule and every dashboard expression.
@Suite("Operator view", .serialized, .timeLimit(.minutes(5)), .enabled(if: Integration.isEnabled))
struct OperatorViewTests {
    @Test("status: healthy exits 0 with every part in the JSON document; a record the projections cannot decode makes it degraded (1) with the reason on its DLQ's line; a service down makes it down (2)")
    func statusExitCodes() async throws {
        let offset = Integration.freePortOffset(for: DevStack.ports)
        let dev = try await DevStack.start(["--port-offset", String(offset)])
        defer { dev.cleanUp() }
        let environment = ["BACKBONE_HOME": dev.home]
        // A reading session and a room upload: every consumer group stores its positions.
        let demo = try await CLIProcess.run(["demo"], environment: environment)
        #expect(demo.status == 0, "\(demo.stderr)")

        // Healthy: the stack settles within seconds.
        var healthy: (outcome: CLIProcess.Outcome, document: [String: Any])?
        _ = await Integration.eventually(timeout: .seconds(60), every: .milliseconds(500)) {
            guard let look = try? await Self.status(environment) else { return false }
            healthy = look
            return look.outcome.status == 0
        }
        let (outcome, document) = try #require(healthy)
        #expect(outcome.status == 0, "\(outcome.stdout)\n\(outcome.stderr)")
        #expect(document["status"] as? String == "healthy")
        #expect((document["reasons"] as? [String])?.isEmpty == true)
        let services = try #require(document["services"] as? [[String: Any]])
        #expect(Set(services.compactMap { $0["name"] as? String })
                == ["ingest", "progress-projector", "analytics-aggregator", "transcode-worker", "realtime-notifier"])
        #expect(services.allSatisfy { $0["readiness"] as? String == "ready" && $0["state"] as? String == "healthy" })
        let groups = try #require(document["consumerGroups"] as? [[String: Any]])
        let groupNames = Set(groups.compactMap { $0["group"] as? String })
        #expect(groupNames.isSuperset(of: ["progress-projector", "analytics-aggregator"]), "\(groupNames)")
        #expect(groups.allSatisfy { $0["lagRecords"] is Int && $0["lagSeconds"] is Double && $0["applyRatePerSecond"] is Double })
        let outboxes = try #require(document["outboxes"] as? [[String: Any]])
        #expect(Set(outboxes.compactMap { $0["name"] as? String }).isSuperset(of: ["room-uploads", "transcode-status", "progress-notifications",
                                                                                   "account-deletions", "realtime-history"]))
        let transcode = try #require(document["transcodeQueue"] as? [String: Any])
        #expect(transcode["queued"] as? Int == 0 && transcode["failedLastHour"] as? Int == 0)
        #expect((document["uploads"] as? [String: Any])?["uploading"] as? Int == 0)
        #expect((document["accountDeletions"] as? [String: Any])?["scheduled"] as? Int == 0)
        #expect((document["postgres"] as? [String: Any])?["state"] as? String == "healthy")
        #expect((document["kafka"] as? [String: Any])?["state"] as? String == "healthy")

        // Degraded: a record no projection can decode goes to reading.events.v2.dlq.
        let brokers = try #require(dev.value("KAFKA_BROKERS"))
        let produced = try await CLIProcess.shell("printf 'not a reading event\\n' | kcat -P -b \(brokers) -t reading.events.v2 -k status-test")
        #expect(produced.status == 0, "\(produced.output)")
        var degraded: (outcome: CLIProcess.Outcome, document: [String: Any])?
        _ = await Integration.eventually(timeout: .seconds(60), every: .milliseconds(500)) {
            guard let look = try? await Self.status(environment) else { return false }
            degraded = look
            return look.outcome.status == 1
        }
        let degradedLook = try #require(degraded)
        #expect(degradedLook.outcome.status == 1, "\(degradedLook.outcome.stdout)")
        #expect(degradedLook.document["status"] as? String == "degraded")
        let queues = try #require(degradedLook.document["deadLetterQueues"] as? [[String: Any]])
        let dlq = try #require(queues.first { $0["topic"] as? String == "reading.events.v2.dlq" }, "\(queues)")
        #expect((dlq["sinceLastReplay"] as? Int ?? 0) >= 1)
        #expect(dlq["state"] as? String == "degraded")
        #expect((dlq["reason"] as? String)?.contains("reading.events.v2.dlq received") == true, "\(dlq)")
        #expect((degradedLook.document["reasons"] as? [String])?.first?.hasPrefix("degraded: reading.events.v2.dlq") == true)

        // Down: ingest does not answer at its URL.
        let nowhere = "http://127.0.0.1:\(Integration.freePort())"
        let down = try await Self.status(environment.merging(["INGEST_URL": nowhere]) { $1 })
        #expect(down.outcome.status == 2, "\(down.outcome.stdout)")
        #expect(down.document["status"] as? String == "down")
        let ingest = try #require((down.document["services"] as? [[String: Any]])?.first { $0["name"] as? String == "ingest" })
        #expect(ingest["readiness"] as? String == "unreachable" && ingest["state"] as? String == "down")
        #expect((ingest["reason"] as? String)?.contains(nowhere) == true, "\(ingest)")
        #expect((down.document["reasons"] as? [String])?.first?.hasPrefix("down: ingest at \(nowhere)") == true)
    }

    @Test("every /metrics passes promtool check metrics, and Prometheus scraping a loaded backbone dev evaluates every alert rule and every dashboard expression: each parses, each panel's returns data",
          .enabled(if: Self.promtool != nil && Self.prometheus != nil))
    func prometheusEvaluatesRulesAndDashboard() async throws {
        let offset = Integration.freePortOffset(for: DevStack.ports)
        let dev = try await DevStack.start(["--port-offset", String(offset)])
        defer { dev.cleanUp() }
        // One registry serves every service's /metrics in backbone dev: one target is the whole stack.
        let ingest = "127.0.0.1:\(8080 + offset)"
        let server = try PrometheusServer.start(target: ingest)
        defer { server.stop() }
        #expect(await Integration.eventually(timeout: .seconds(30)) { await server.answers() }, "Prometheus is not ready: \(server.log)")

        // Load: a reading session and a room upload through every service.
        let demo = try await CLIProcess.run(["demo"], environment: ["BACKBONE_HOME": dev.home])
        #expect(demo.status == 0, "\(demo.stderr)")

        for port in 8080...8084 {
            let check = try await CLIProcess.shell("curl -fsS http://127.0.0.1:\(port + offset)/metrics | \(Self.promtool!) check metrics")
            #expect(check.status == 0 && check.output.isEmpty, "port \(port + offset): \(check.output)")
        }

        // A few more scrapes after the load, so every rate has two samples with it.
        try await Task.sleep(for: .seconds(4))
        let rules = try await server.rules()
        let written = try String(contentsOf: Integration.packageRoot.appendingPathComponent("deploy/prometheus/alerts.yml"), encoding: .utf8)
            .split(separator: "\n").filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("- alert:") }.count
        #expect(written >= 11 && rules.count == written, "every rule of deploy/prometheus/alerts.yml loaded: \(rules.map(\.name))")
        for rule in rules {
            #expect(rule.health == "ok", "\(rule.name): \(rule.health) \(rule.lastError ?? "")")
            let answer = try await server.query(rule.query)
            #expect(answer.error == nil, "\(rule.name) does not evaluate: \(answer.error ?? "")")
        }
        let dashboard = try Self.dashboardExpressions()
        #expect(dashboard.count >= 15)
        for (panel, expression) in dashboard {
            let answer = try await server.query(expression)
            #expect(answer.error == nil, "\(panel): \(expression) does not evaluate: \(answer.error ?? "")")
        }
        // A rate needs two samples of its series: on a busy machine a scrape (which measures the
        // backlog in PostgreSQL) can miss its 2 s, so the panels are asked again until each has
        // data (or a minute has passed).
        var empty: [String] = []
        let filled = await Integration.eventually(timeout: .seconds(60)) {
            empty = []
            for (panel, expression) in dashboard where (try? await server.query(expression))?.series ?? 0 == 0 {
                empty.append("\(panel): \(expression)")
            }
            return empty.isEmpty
        }
        #expect(filled, "panels without data:\n\(empty.joined(separator: "\n"))\n\(server.log.suffix(2000))")
    }

    /// `backbone status --json` and its document.
    static func status(_ environment: [String: String]) async throws -> (outcome: CLIProcess.Outcome, document: [String: Any]) {
        let outcome = try await CLIProcess.run(["status", "--json"], environment: environment)
        let document = try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any]
        return (outcome, try #require(document, "not a JSON document: \(outcome.stdout) \(outcome.stderr)"))
    }

    /// Every expression of deploy/grafana/dashboards/backbone.json, with its panel's title.
    static func dashboardExpressions() throws -> [(panel: String, expression: String)] {
        let url = Integration.packageRoot.appendingPathComponent("deploy/grafana/dashboards/backbone.json")
        let dashboard = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        return panels.flatMap { panel in
            ((panel["targets"] as? [[String: Any]]) ?? []).compactMap { target in
                (target["expr"] as? String).map { (panel["title"] as? String ?? "?", $0) }
            }
        }
    }

    static let promtool = DeploymentTests.executable("promtool")
    static let prometheus = DeploymentTests.executable("prometheus")
}

/// Debian's Prometheus on loopback, scraping one target every second with the project's
/// alert rules, in a folder of its own. `@unchecked Sendable`: the process is started in
/// `start` and afterwards only asked whether it runs and told to stop, which `Process` allows
/// from any thread.
final class PrometheusServer: @unchecked Sendable {
    let process: Process
    let folder: String
    let base: String

    var log: String { (try? String(contentsOfFile: folder + "/prometheus.log", encoding: .utf8)) ?? "" }

    private init(process: Process, folder: String, base: String) {
        self.process = process
        self.folder = folder
        self.base = base
    }

    static func start(target: String) throws -> PrometheusServer {
        let folder = CLIProcess.emptyHome()
        let rules = Integration.packageRoot.appendingPathComponent("deploy/prometheus/alerts.yml").path
        try """
            global: {scrape_interval: 2s, scrape_timeout: 2s, evaluation_interval: 1s}
            rule_files: ["\(rules)"]
            scrape_configs:
              - job_name: backbone-dev
                static_configs: [{targets: ["\(target)"]}]
            """.write(toFile: folder + "/prometheus.yml", atomically: true, encoding: .utf8)
        let port = Integration.freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: OperatorViewTests.prometheus!)
        process.arguments = ["--config.file=\(folder)/prometheus.yml", "--storage.tsdb.path=\(folder)/data",
                             "--web.listen-address=127.0.0.1:\(port)"]
        _ = FileManager.default.createFile(atPath: folder + "/prometheus.log", contents: nil)
        let output = FileHandle(forWritingAtPath: folder + "/prometheus.log")
        process.standardOutput = output
        process.standardError = output
        try process.run()
        return PrometheusServer(process: process, folder: folder, base: "http://127.0.0.1:\(port)")
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: folder)
    }

    func answers() async -> Bool {
        (try? await get("/-/ready").status) == 200
    }

    struct Rule { var name: String; var query: String; var health: String; var lastError: String? }

    /// The loaded rules with their evaluation health.
    func rules() async throws -> [Rule] {
        let body = try await get("/api/v1/rules").json
        let groups = (body["data"] as? [String: Any])?["groups"] as? [[String: Any]] ?? []
        return groups.flatMap { ($0["rules"] as? [[String: Any]]) ?? [] }.map {
            Rule(name: $0["name"] as? String ?? "", query: $0["query"] as? String ?? "", health: $0["health"] as? String ?? "",
                 lastError: $0["lastError"] as? String)
        }
    }

    /// An instant query: how many series it returned, or the error Prometheus gave.
    func query(_ expression: String) async throws -> (series: Int, error: String?) {
        var components = URLComponents(string: base + "/api/v1/query")!
        components.queryItems = [URLQueryItem(name: "query", value: expression)]
        // URLComponents leaves `+` as it is, which a query string reads as a space.
        components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        let body = try await get(components.url!.absoluteString.replacingOccurrences(of: base, with: "")).json
        guard body["status"] as? String == "success" else { return (0, body["error"] as? String ?? "\(body)") }
        return (((body["data"] as? [String: Any])?["result"] as? [Any])?.count ?? 0, nil)
    }

    func get(_ path: String) async throws -> (status: Int, json: [String: Any]) {
        var request = URLRequest(url: URL(string: base + path)!)
        request.timeoutInterval = 10
        let (data, response) = try await URLSession.shared.data(for: request)
        let json = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, json)
    }
}
