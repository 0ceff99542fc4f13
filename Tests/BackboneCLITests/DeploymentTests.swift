import BackboneTestSupport
import Foundation
import Contracts
import DevInfrastructure
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

    @Test("the compose file runs every service backbone dev runs, with its port and a health check, and Prometheus and Grafana with the project's configuration, rules and dashboard mounted")
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
        for infrastructure in ["kafka-1:", "kafka-2:", "kafka-3:", "postgres:", "seaweedfs:", "topic-init:", "migrate:", "gateway:",
                               "prometheus:", "alertmanager:", "grafana:"] {
            #expect(text.contains("\n  \(infrastructure)\n"), "\(infrastructure) is in docker-compose.yml")
        }
        // The same settings names as `backbone dev`: every variable the services get is in the settings table.
        let settings = try String(contentsOf: Integration.packageRoot.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let services = try #require(try Self.composeDocument()["services"] as? [String: [String: Any]])
        try Self.expectOperationsMounts(services)
        for entry in ServiceCatalog.entries {
            for key in (services[entry.name]?["environment"] as? [String: Any] ?? [:]).keys {
                #expect(settings.contains("`\(key)`"), "\(entry.name)'s \(key) is not a documented setting")
            }
        }
    }

    /// Prometheus reads deploy/prometheus (its configuration and the alert rules it names) and
    /// sends what fires to Alertmanager, which reads deploy/alertmanager; Grafana reads deploy/grafana's provisioning and the dashboards at the path the provisioning
    /// names; the admin password's error points at the page that documents it.
    static func expectOperationsMounts(_ services: [String: [String: Any]]) throws {
        let root = Integration.packageRoot
        func volumes(_ service: String) -> [String] { services[service]?["volumes"] as? [String] ?? [] }
        #expect(volumes("prometheus").contains("./deploy/prometheus:/etc/prometheus:ro"), "\(volumes("prometheus"))")
        #expect((services["prometheus"]?["command"] as? [String])?.contains("--config.file=/etc/prometheus/prometheus.yml") == true)
        let scrape = try String(contentsOf: root.appendingPathComponent("deploy/prometheus/prometheus.yml"), encoding: .utf8)
        #expect(scrape.contains("rule_files:\n  - alerts.yml\n") && FileManager.default.fileExists(
            atPath: root.appendingPathComponent("deploy/prometheus/alerts.yml").path), "the rules sit beside the configuration")

        // What fires goes to Alertmanager, which reads its routing from deploy/alertmanager.
        #expect(scrape.contains("alertmanagers:\n    - static_configs: [{targets: [\"alertmanager:9093\"]}]"), "\(scrape)")
        #expect(volumes("alertmanager").contains("./deploy/alertmanager:/etc/alertmanager:ro"), "\(volumes("alertmanager"))")
        #expect((services["alertmanager"]?["command"] as? [String])?.contains("--config.file=/etc/alertmanager/alertmanager.yml") == true)
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("deploy/alertmanager/alertmanager.yml").path))

        #expect(volumes("grafana").contains("./deploy/grafana/provisioning:/etc/grafana/provisioning:ro"), "\(volumes("grafana"))")
        let provider = try String(contentsOf: root.appendingPathComponent("deploy/grafana/provisioning/dashboards/backbone.yml"), encoding: .utf8)
        let path = try #require(provider.split(separator: "\n").first { $0.contains("path:") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces))
        #expect(volumes("grafana").contains("./deploy/grafana/dashboards:\(path):ro"), "the dashboards are mounted where the provisioning reads them (\(path))")
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("deploy/grafana/dashboards/backbone.json").path))
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("deploy/grafana/provisioning/datasources/prometheus.yml").path))

        let password = try #require((services["grafana"]?["environment"] as? [String: Any])?["GF_SECURITY_ADMIN_PASSWORD"] as? String)
        let page = try #require(password.firstRange(of: #/docs/[a-z-]+\.md/#).map { String(password[$0]) }, "\(password)")
        let documented = try String(contentsOf: root.appendingPathComponent(page), encoding: .utf8)
        #expect(documented.contains("`GRAFANA_ADMIN_PASSWORD`"), "\(page) documents GRAFANA_ADMIN_PASSWORD")
    }

    @Test("Prometheus scrapes every replica of every service backbone dev runs, on its port")
    func prometheusScrapesEveryService() throws {
        let text = try String(contentsOf: Integration.packageRoot.appendingPathComponent("deploy/prometheus/prometheus.yml"), encoding: .utf8)
        for entry in ServiceCatalog.entries {
            #expect(text.contains("- job_name: \(entry.name)\n    dns_sd_configs: [{names: [\(entry.name)], type: A, port: \(entry.defaultPort)"),
                    "\(entry.name) is scraped on \(entry.defaultPort)")
        }
    }

    @Test("every field of the Grafana dashboard is one Grafana 11.1's dashboard model knows (grafana-foundation-sdk); a bogus field is named",
          .enabled(if: Self.grafanaModel))
    func dashboardFieldsAreGrafanas() throws {
        let dashboard = Integration.packageRoot.appendingPathComponent("deploy/grafana/dashboards/backbone.json")
        let checked = try Self.unknownDashboardFields(dashboard.path)
        #expect(checked.status == 0 && checked.output.isEmpty, "\(checked.output)")

        var bogus = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dashboard)) as? [String: Any])
        var panels = try #require(bogus["panels"] as? [[String: Any]])
        panels[1]["gridPosition"] = panels[1]["gridPos"]
        bogus["panels"] = panels
        bogus["refreshEvery"] = "5s"
        let copy = CLIProcess.emptyHome() + "/backbone.json"
        try JSONSerialization.data(withJSONObject: bogus).write(to: URL(fileURLWithPath: copy))
        let rejected = try Self.unknownDashboardFields(copy)
        #expect(rejected.status == 1, "\(rejected.output)")
        #expect(rejected.output.split(separator: "\n").sorted() == ["/panels[1]/gridPosition", "/refreshEvery"], "\(rejected.output)")
    }

    /// The fields of the dashboard at `path` that Grafana's dashboard model (grafana-foundation-sdk,
    /// generated from Grafana's schema) does not know: it reads the JSON into the model and writes
    /// it back, dropping what it does not know; each dropped field's path is a line, exit status 1.
    static func unknownDashboardFields(_ path: String) throws -> (status: Int32, output: String) {
        try Integration.run("python3", ["-c", """
            import json, sys
            from grafana_foundation_sdk.cog import plugins
            from grafana_foundation_sdk.cog.encoder import JSONEncoder
            from grafana_foundation_sdk.models.dashboard import Dashboard
            plugins.register_default_plugins()
            written = json.load(open(sys.argv[1]))
            read = json.loads(json.dumps(Dashboard.from_json(written), cls=JSONEncoder))
            def unknown(a, b, at):
                if isinstance(a, dict) and isinstance(b, dict):
                    for key in a:
                        yield from ([at + "/" + key] if key not in b else unknown(a[key], b[key], at + "/" + key))
                elif isinstance(a, list) and isinstance(b, list):
                    for i, (x, y) in enumerate(zip(a, b)):
                        yield from unknown(x, y, f"{at}[{i}]")
            fields = list(unknown(written, read, ""))
            print("\\n".join(fields), end="")
            sys.exit(1 if fields else 0)
            """, path])
    }

    /// grafana-foundation-sdk from PyPI (deploy/requirements-test.txt).
    static let grafanaModel = (try? Integration.run("python3", ["-c", "import grafana_foundation_sdk"]).status) == 0

    /// The compose file parsed by PyYAML (anchors and merge keys resolved), as JSON.
    static func composeDocument() throws -> [String: Any] {
        let result = try Integration.run("python3", ["-c", """
            import json, sys, yaml
            print(json.dumps(yaml.safe_load(open(sys.argv[1]))))
            """, Self.compose.path])
        guard result.status == 0, let data = result.output.data(using: .utf8),
              let document = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ComposeUnreadable(output: String(result.output.prefix(2000)))
        }
        return document
    }

    @Test("three KRaft brokers whose defaults are replication factor 3 and min.insync.replicas=2")
    func brokersAreReplicated() throws {
        let services = try #require(try Self.composeDocument()["services"] as? [String: [String: Any]])
        let brokers = services.keys.filter { $0.hasPrefix("kafka-") }.sorted()
        #expect(brokers == ["kafka-1", "kafka-2", "kafka-3"])
        var clusterIDs = Set<String>()
        for (index, name) in brokers.enumerated() {
            let env = try #require(services[name]?["environment"] as? [String: Any], "\(name) has an environment")
            func value(_ key: String) -> String { env[key].map { "\($0)" } ?? "" }
            #expect(value("KAFKA_NODE_ID") == "\(index + 1)")
            #expect(value("KAFKA_PROCESS_ROLES") == "broker,controller")
            #expect(value("KAFKA_CONTROLLER_QUORUM_VOTERS") == "1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093")
            #expect(value("KAFKA_DEFAULT_REPLICATION_FACTOR") == "3")
            #expect(value("KAFKA_MIN_INSYNC_REPLICAS") == "2")
            #expect(value("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR") == "3")
            #expect(value("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR") == "3")
            #expect(value("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR") == "2")
            #expect(value("KAFKA_UNCLEAN_LEADER_ELECTION_ENABLE") == "false")
            #expect(value("KAFKA_AUTO_CREATE_TOPICS_ENABLE") == "false")
            // The log directory is the volume (the image's default is under /tmp).
            let volumes = services[name]?["volumes"] as? [String] ?? []
            #expect(volumes.contains { $0.hasSuffix(":\(value("KAFKA_LOG_DIRS"))") }, "\(name)'s log directory is a volume")
            clusterIDs.insert(value("CLUSTER_ID"))
        }
        #expect(clusterIDs.count == 1, "one cluster id for every node")
        let serviceEnv = try #require(services["ingest"]?["environment"] as? [String: Any])
        #expect(serviceEnv["KAFKA_BROKERS"] as? String == "kafka-1:9092,kafka-2:9092,kafka-3:9092")
    }

    @Test("topic-init creates every topic with the services' partition counts, replication factor 3 and min.insync.replicas=2")
    func topicInitCreatesEveryTopic() throws {
        let services = try #require(try Self.composeDocument()["services"] as? [String: [String: Any]])
        let script = try #require((services["topic-init"]?["command"] as? [String])?.joined(separator: "\n"))
        #expect(script.contains("--replication-factor 3") && script.contains("--config min.insync.replicas=2"))
        #expect(script.contains("--add-config min.insync.replicas=2"), "an existing topic gets the settings too")
        // `topic NAME PARTITIONS RETENTION_MS` lines.
        var created: [String: (partitions: Int32, retention: Int64)] = [:]
        for line in script.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count == 4, words[0] == "topic", let partitions = Int32(words[2]), let retention = Int64(words[3]) else { continue }
            created[String(words[1])] = (partitions, retention)
        }
        for topic in Topics.all {
            #expect(created[topic.name]?.partitions == topic.partitions, "\(topic.name): \(topic.partitions) partitions")
        }
        // The account-deletion topic and a dead-letter topic for every consumed topic.
        for name in ["user.deletions.v1"] + Topics.all.map(\.name).filter({ !$0.hasSuffix(".dlq") }) {
            #expect(created[name] != nil, "\(name) is created")
            #expect(created[Topics.deadLetter(for: name)] != nil, "\(Topics.deadLetter(for: name)) is created")
        }
        // `backbone rebuild` replays the reading events from offset 0: they are kept for ever.
        #expect(created[Topics.readingEvents]?.retention == -1)
        // … and the room catalog's three topics (`backbone rebuild catalog`).
        for topic in [Topics.roomTranscodeRequests, Topics.roomTranscodeStatus, Topics.roomUploads] {
            #expect(created[topic]?.retention == -1, "\(topic) is kept for ever")
        }
        #expect(created["user.deletions.v1"]?.retention == -1)
    }

    @Test("every service scales: no container name, no host port, and the gateway re-resolves its replicas")
    func servicesScale() throws {
        let services = try #require(try Self.composeDocument()["services"] as? [String: [String: Any]])
        for entry in ServiceCatalog.entries {
            let service = try #require(services[entry.name], "\(entry.name) is a service")
            #expect(service["container_name"] == nil, "\(entry.name) has no container_name (--scale)")
            #expect(service["ports"] == nil, "\(entry.name) publishes no host port (--scale); the gateway is the origin")
        }
        let gateway = try String(contentsOf: Integration.packageRoot.appendingPathComponent("deploy/gateway/nginx.conf"), encoding: .utf8)
        let upstreams = try Self.wholeMatches(#"upstream\s+(\w+)\s*\{([^}]*)\}"#, in: gateway)
        #expect(upstreams.count == ServiceCatalog.entries.count + 1, "every service's, and the auth server's")
        for block in upstreams {
            #expect(block.contains("zone ") && block.contains(" resolve;"), "upstream re-resolves its replicas: \(block)")
        }
        #expect(gateway.contains("resolver 127.0.0.11"), "Docker's DNS")
        // Each proxied request or Realtime socket holds two of a worker's connections: nginx's
        // default (512 a worker) reset the apps' connections past about 250 at once.
        let connections = try Self.wholeMatches(#"worker_connections\s+\d+;"#, in: gateway).first
            .flatMap { Int($0.filter(\.isNumber)) } ?? 512
        #expect(connections >= 8_192, "the origin holds thousands of clients at once, not nginx's default 512 a worker")
        #expect(gateway.contains("worker_processes auto;"), "a worker per core")
    }

    @Test("the gateway answers the errors it raises itself in the services' JSON error shape, readable by a browser app on another origin",
          .enabled(if: Self.executable("nginx") != nil && Self.executable("curl") != nil))
    func gatewayErrorsAreJSON() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // The real config, on loopback ports; every upstream is a closed port (a service down).
        let port = Integration.freePort()
        let compose = try String(contentsOf: Integration.packageRoot.appendingPathComponent("deploy/gateway/nginx.conf"), encoding: .utf8)
        let upstreams = Dictionary(uniqueKeysWithValues: ["ingest", "progress-projector", "analytics-aggregator", "transcode-worker",
                                                          "realtime-notifier", "auth"].map { ($0, Integration.freePort()) })
        let temp = directory.path
        let config = try GatewayServer.loopbackConfiguration(compose, port: port, upstreams: upstreams, directory: temp)
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
        let body = directory.appendingPathComponent("request-body")
        try Data(count: 3_000_000).write(to: body)
        let cases: [(arguments: [String], status: String, code: String)] = [
            (["\(base)/no/such/route"], "404", "NOT_FOUND"),
            (["\(base)/learning/continue"], "503", "SERVICE_UNAVAILABLE"),
            // The transcode worker's routes beyond the catalog reach its upstream (down here), not a 404.
            (["\(base)/rest/v1/redactions?version_id=eq.v-1"], "503", "SERVICE_UNAVAILABLE"),
            (["-X", "POST", "\(base)/functions/v1/transcode-retry"], "503", "SERVICE_UNAVAILABLE"),
            (["\(base)/storage/v1/object/public/rooms/rooms/r-1/v-1/thumbnail.webp"], "503", "SERVICE_UNAVAILABLE"),
            (["-X", "POST", "\(base)/storage/v1/object/sign/rooms/rooms/r-1/v-1/thumbnail.webp"], "503", "SERVICE_UNAVAILABLE"),
            (["\(base)/" + String(repeating: "a", count: 20_000)], "414", "URI_TOO_LONG"),
            (["-H", "X-Big: " + String(repeating: "b", count: 20_000), "\(base)/healthz"], "400", "BAD_REQUEST"),
            // Lines the gateway takes one by one, but more than the 16 KiB of headers it passes on
            // (a service's connection pool takes ~22 KiB): refused here, in the JSON shape.
            (["-H", "X-A: " + String(repeating: "a", count: 7_000), "-H", "X-B: " + String(repeating: "b", count: 7_000),
              "-H", "X-C: " + String(repeating: "c", count: 7_000), "\(base)/learning/continue"], "400", "BAD_REQUEST"),
            // Two such lines pass on (to a service that is down here).
            (["-H", "X-A: " + String(repeating: "a", count: 7_000), "-H", "X-B: " + String(repeating: "b", count: 7_000),
              "\(base)/learning/continue"], "503", "SERVICE_UNAVAILABLE"),
            // A NUL byte in the URL (the realtime notifier's libwebsockets would drop the connection).
            (["\(base)/realtime/v1/channels/user:u-1/events?after=0&%00=x"], "400", "BAD_REQUEST"),
            (["-X", "POST", "--data-binary", "@\(body.path)", "\(base)/learning/reading-events/batch"], "413", "PAYLOAD_TOO_LARGE"),
        ]
        for (arguments, status, code) in cases {
            let response = try fetch(arguments)
            #expect(response.hasPrefix("HTTP/1.1 \(status)"), "\(code): \(response.prefix(300))")
            #expect(response.contains("application/json") && response.contains(#"{"error":{"code":"\#(code)""#), "\(response.prefix(600))")
        }
        #expect(try fetch(["\(base)/learning/continue"]).contains("Retry-After: 5"))
        // A browser app on another origin can read them (and the Retry-After of a 503).
        let origin = ["-H", "Origin: https://remix.example.com"]
        let unavailable = try fetch(origin + ["\(base)/functions/v1/upload-init", "-X", "POST"])
        #expect(unavailable.hasPrefix("HTTP/1.1 503") && unavailable.contains("Access-Control-Allow-Origin: *")
                && unavailable.contains("Access-Control-Expose-Headers: retry-after"), "\(unavailable.prefix(600))")
        let tooLarge = try fetch(origin + ["-X", "POST", "--data-binary", "@\(body.path)", "\(base)/functions/v1/upload-init"])
        #expect(tooLarge.hasPrefix("HTTP/1.1 413") && tooLarge.contains("Access-Control-Allow-Origin: *"), "\(tooLarge.prefix(600))")
        #expect(try fetch(origin + ["\(base)/no/such/route"]).contains("Access-Control-Allow-Origin: *"))
    }

    /// `name` on the `PATH` or in one of `alsoIn` (nginx lives in /usr/sbin).
    static func executable(_ name: String, alsoIn extra: [String] = ["/usr/sbin", "/usr/bin"]) -> String? {
        ((ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + extra)
            .map { "\($0)/\(name)" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// `check-jsonschema` from PyPI (deploy/requirements-test.txt).
    static let checker: String? = executable("check-jsonschema", alsoIn: ["/usr/local/bin", "/root/.pyenv/shims"])

    /// Every whole match of `pattern` in `text`.
    static func wholeMatches(_ pattern: String, in text: String) throws -> [String] {
        let regex = try NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
            Range($0.range, in: text).map { String(text[$0]) }
        }
    }

    struct ComposeUnreadable: Error { let output: String }
}
