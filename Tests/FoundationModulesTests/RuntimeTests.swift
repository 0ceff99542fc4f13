import Auth
import Foundation
import HTTPRouting
import Lifecycle
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime
import Settings
import Synchronization
import Testing

@Suite("Service runtime")
struct RuntimeTests {
    @Test("a refresh read before a cancellation does not bring the cancelled user back; one read after it replaces the set")
    func revokedRefreshAfterRemoval() {
        let pending = RevokedSubjects()
        pending.insert(hashes: [RevokedSubjects.hash("alice"), RevokedSubjects.hash("bob")])
        let before = pending.changes
        pending.remove(hash: RevokedSubjects.hash("alice"))  // cancelled while the table was read
        #expect(!pending.replace(hashes: [RevokedSubjects.hash("alice"), RevokedSubjects.hash("bob")], unlessChangedSince: before))
        #expect(!pending.contains("alice") && pending.contains("bob"))
        #expect(pending.replace(hashes: [RevokedSubjects.hash("bob")], unlessChangedSince: pending.changes))
        #expect(!pending.contains("alice") && pending.contains("bob"))
    }

    @Test("a periodic task goes on after a failing round, and a cancellation ends it mid-sleep at once")
    func periodicTask() async throws {
        let rounds = Atomic<Int>(0)
        let task = PeriodicTask(name: "test", every: .milliseconds(20), jitter: .milliseconds(5), failure: "round failed",
                                logger: .disabled) {
            struct Failure: Error {}
            if rounds.add(1, ordering: .relaxed).newValue == 1 { throw Failure() }
        }
        let running = Task { try await task.run() }
        let deadline = ContinuousClock.now + .seconds(5)
        while rounds.load(ordering: .relaxed) < 3, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(rounds.load(ordering: .relaxed) >= 3, "rounds after the failing one")
        let slow = Task { try await PeriodicTask(name: "slow", every: .seconds(3600), failure: "x", logger: .disabled) {}.run() }
        try await Task.sleep(for: .milliseconds(50))
        let cancelled = ContinuousClock.now
        slow.cancel()
        _ = await slow.result
        #expect(ContinuousClock.now - cancelled < .seconds(1))
        running.cancel()
        _ = await running.result
    }

    @Test("configuration errors list every missing and invalid key at once")
    func configurationErrors() {
        var env = EnvironmentReader(["HTTP_PORT": "eighty", "JWT_SECRET": "short", "LOG_LEVEL": "loud"])
        _ = CommonConfiguration.read(from: &env, defaultPort: 8080)
        do {
            try env.validate()
            Issue.record("expected a configuration error")
        } catch {
            let text = error.description
            for key in ["KAFKA_BROKERS", "DATABASE_URL", "JWT_SECRET", "HTTP_PORT", "LOG_LEVEL"] {
                #expect(text.contains(key), "\(key) should be named")
            }
        }
    }

    @Test("a complete environment gives typed values")
    func configurationValues() throws {
        var env = EnvironmentReader(["KAFKA_BROKERS": "127.0.0.1:9092", "DATABASE_URL": "postgres://x", "JWT_SECRET": "0123456789abcdef", "HTTP_PORT": "9000"])
        let config = CommonConfiguration.read(from: &env, defaultPort: 8080)
        try env.validate()
        #expect(config.httpPort == 9000 && config.kafkaBrokers == "127.0.0.1:9092" && config.logLevel == .info)
    }

    @Test("the heap trim gives pages freed inside the heap back to the kernel (what glibc keeps for reuse otherwise)")
    func heapTrim() throws {
        func residentMiB() throws -> Double {
            let fields = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8).split(separator: " ")
            return Double(fields[1])! * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
        }
        // 64 MiB in 64 KiB blocks (under the mmap threshold: inside the heap), written so that
        // they are resident; all freed but the last, which keeps the free space off the heap's top.
        let baseline = try residentMiB()
        let blocks = (0..<1_024).map { _ in UnsafeMutableRawPointer.allocate(byteCount: 65_536, alignment: 16) }
        for block in blocks { block.initializeMemory(as: UInt8.self, repeating: 1, count: 65_536) }
        for block in blocks.dropLast() { block.deallocate() }
        let before = try residentMiB()
        HeapTrim.trim()
        let after = try residentMiB()
        blocks.last?.deallocate()
        #expect(before - baseline > 48, "freed, but still resident until trimmed: \(baseline) → \(before) MiB")
        #expect(before - after > 32, "resident \(before) MiB before the trim, \(after) MiB after")
    }

    @Test("consumers keep librdkafka's fetch wait against a real cluster unless KAFKA_FETCH_WAIT_MS sets one (0–300,000 ms)")
    func fetchWaitSetting() throws {
        let base = ["KAFKA_BROKERS": "127.0.0.1:9092", "DATABASE_URL": "postgres://x", "JWT_SECRET": "0123456789abcdef"]
        var plain = EnvironmentReader(base)
        let defaults = CommonConfiguration.read(from: &plain, defaultPort: 8080)
        try plain.validate()
        #expect(defaults.kafkaFetchWait == nil && defaults.kafkaConsumerProperties.isEmpty)
        var set = EnvironmentReader(base.merging(["KAFKA_FETCH_WAIT_MS": "20"]) { $1 })
        #expect(CommonConfiguration.read(from: &set, defaultPort: 8080).kafkaConsumerProperties == ["fetch.wait.max.ms": "20"])
        try set.validate()
        for wrong in ["-1", "300001", "soon"] {
            var reader = EnvironmentReader(base.merging(["KAFKA_FETCH_WAIT_MS": wrong]) { $1 })
            _ = CommonConfiguration.read(from: &reader, defaultPort: 8080)
            #expect(throws: ConfigurationError.self, "\(wrong)") { try reader.validate() }
        }
    }

    @Test("CORS_ALLOWED_ORIGINS: * by default, a comma-separated list of origins kept as given; anything that is no origin as a browser sends it refused, named")
    func corsOrigins() throws {
        let base = ["KAFKA_BROKERS": "127.0.0.1:9092", "DATABASE_URL": "postgres://x", "JWT_SECRET": "0123456789abcdef"]
        var plain = EnvironmentReader(base)
        #expect(CommonConfiguration.read(from: &plain, defaultPort: 8080).corsAllowedOrigins == ["*"])
        try plain.validate()
        var list = EnvironmentReader(base.merging(["CORS_ALLOWED_ORIGINS": " https://remix.example.com, http://localhost:5173,http://[::1]:8000 "]) { $1 })
        #expect(CommonConfiguration.read(from: &list, defaultPort: 8080).corsAllowedOrigins
                == ["https://remix.example.com", "http://localhost:5173", "http://[::1]:8000"])
        try list.validate()
        for wrong in ["remix.example.com", "https://remix.example.com/", "https://remix.example.com/editor", "https://remix.example.com:0",
                      "https://remix.example.com:99999", "https://", "https://user@remix.example.com", ",", "https://a.example, ftp//b"] {
            var reader = EnvironmentReader(base.merging(["CORS_ALLOWED_ORIGINS": wrong]) { $1 })
            _ = CommonConfiguration.read(from: &reader, defaultPort: 8080)
            do {
                try reader.validate()
                Issue.record("\(wrong) was accepted")
            } catch {
                #expect(error.description.contains("CORS_ALLOWED_ORIGINS"), "\(wrong): \(error.description)")
            }
        }
        var named = EnvironmentReader(base.merging(["CORS_ALLOWED_ORIGINS": "https://ok.example,remix.example.com"]) { $1 })
        _ = CommonConfiguration.read(from: &named, defaultPort: 8080)
        #expect(throws: ConfigurationError.self) { try named.validate() }
        #expect(named.problems.contains { $0.contains("\"remix.example.com\" is not an origin") && !$0.contains("ok.example") },
                "\(named.problems)")
    }

    @Test("token settings: JWT_JWKS_FILE or JWT_JWKS_URL (one, an http(s) URL), JWT_ISSUER and JWT_AUDIENCE, none by default")
    func tokenSettings() throws {
        let base = ["KAFKA_BROKERS": "127.0.0.1:9092", "DATABASE_URL": "postgres://x", "JWT_SECRET": "0123456789abcdef"]
        var plain = EnvironmentReader(base)
        #expect(CommonConfiguration.read(from: &plain, defaultPort: 8080).tokenVerification == TokenVerificationSettings())
        let url = "https://project.supabase.co/auth/v1/.well-known/jwks.json"
        var supabase = EnvironmentReader(base.merging(["JWT_JWKS_URL": url, "JWT_ISSUER": "https://project.supabase.co/auth/v1",
                                                       "JWT_AUDIENCE": "authenticated"]) { $1 })
        let settings = CommonConfiguration.read(from: &supabase, defaultPort: 8080).tokenVerification
        try supabase.validate()
        #expect(settings == TokenVerificationSettings(keySet: .url(url), issuer: "https://project.supabase.co/auth/v1",
                                                      audience: "authenticated"))
        var file = EnvironmentReader(["JWT_JWKS_FILE": "/etc/backbone/jwks.json"])
        #expect(TokenVerificationSettings.read(from: &file).keySet == .file("/etc/backbone/jwks.json"))
        for wrong in [["JWT_JWKS_FILE": "/a", "JWT_JWKS_URL": url], ["JWT_JWKS_URL": "file:///etc/passwd"]] {
            var reader = EnvironmentReader(wrong)
            _ = TokenVerificationSettings.read(from: &reader)
            #expect(throws: ConfigurationError.self, "\(wrong)") { try reader.validate() }
        }
    }

    @Test("services stop in reverse start order when one of them ends")
    func reverseShutdown() async throws {
        let order = Mutex<[String]>([])
        func forever(_ name: String) -> ClosureService {
            ClosureService(name: name) {
                do { try await Task.sleep(for: .seconds(60)) } catch {}
                order.withLock { $0.append(name) }
            }
        }
        let finisher = ClosureService(name: "finisher") { try await Task.sleep(for: .milliseconds(50)) }
        let group = ServiceGroup(services: [forever("first"), forever("second"), finisher], handlesSignals: false, logger: .disabled)
        try await group.run()
        #expect(order.withLock { $0 } == ["second", "first"])
    }

    @Test("a failing service fails the group and stops the others")
    func failurePropagates() async {
        struct Boom: Error {}
        let stopped = Mutex(false)
        let survivor = ClosureService(name: "survivor") {
            do { try await Task.sleep(for: .seconds(60)) } catch {}
            stopped.withLock { $0 = true }
        }
        let failing = ClosureService(name: "failing") { throw Boom() }
        await #expect(throws: Boom.self) {
            try await ServiceGroup(services: [survivor, failing], handlesSignals: false, logger: .disabled).run()
        }
        #expect(stopped.withLock { $0 })
    }

    @Test("shutdown is bounded: a service stuck on a dependency is left behind after SHUTDOWN_TIMEOUT_SECONDS")
    func boundedShutdown() async throws {
        var env = EnvironmentReader(["SHUTDOWN_TIMEOUT_SECONDS": "1"])
        let configuration = CommonConfiguration.read(from: &env, defaultPort: 8080)
        #expect(configuration.shutdownTimeout == .seconds(1))
        var invalid = EnvironmentReader(["SHUTDOWN_TIMEOUT_SECONDS": "forever"])
        _ = CommonConfiguration.read(from: &invalid, defaultPort: 8080)
        #expect(throws: ConfigurationError.self) { try invalid.validate() }

        // Waits 60 s on something that ignores cancellation (a blocked poll thread, a
        // database that does not answer).
        let stuck = ClosureService(name: "stuck") {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().asyncAfter(deadline: .now() + 60) { c.resume() }
            }
        }
        let group = ServiceGroup(services: [stuck], handlesSignals: false, shutdownTimeout: configuration.shutdownTimeout,
                                 logger: .disabled)
        let start = ContinuousClock.now
        let task = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        _ = await task.result
        let elapsed = ContinuousClock.now - start
        #expect(elapsed < .seconds(5), "shutdown took \(elapsed)")
    }

    @Test("metrics render in the Prometheus text format")
    func metricsRendering() {
        let metrics = MetricsRegistry()
        metrics.describe("http_requests_total", type: "counter", help: "Requests served.")
        metrics.increment("http_requests_total", labels: ["path": "/x", "status": "200"])
        metrics.increment("http_requests_total", labels: ["path": "/x", "status": "200"])
        metrics.observe("latency_seconds", 0.003)
        metrics.set("kafka_consumer_lag", 7, labels: ["partition": "0"])
        let text = metrics.render()
        #expect(text.contains("# TYPE http_requests_total counter"))
        #expect(text.contains(#"http_requests_total{path="/x",status="200"} 2"#))
        #expect(text.contains(#"latency_seconds_bucket{le="0.005"} 1"#))
        #expect(text.contains("latency_seconds_count 1"))
        #expect(text.contains(#"kafka_consumer_lag{partition="0"} 7"#))
    }

    @Test("health routes answer healthz, readyz with each check, and metrics")
    func healthRoutes() async {
        let router = HealthRoutes.router(service: "test", checks: [
            ReadinessCheck(name: "kafka") { true }, ReadinessCheck(name: "postgres") { false },
        ], metrics: MetricsRegistry())
        #expect(await router.respond(to: HTTPRequest(method: .get, path: "/healthz")).status == .ok)
        let ready = await router.respond(to: HTTPRequest(method: .get, path: "/readyz"))
        #expect(ready.status == .serviceUnavailable)
        #expect(String(decoding: ready.body, as: UTF8.self).contains(#""postgres":false"#))
        // Like every 503 of the project, a not-ready answer says when to ask again.
        #expect(ready.headers["Retry-After"] == String(HealthRoutes.notReadyRetryAfterSeconds))
        let allUp = HealthRoutes.router(service: "test", checks: [ReadinessCheck(name: "kafka") { true }], metrics: MetricsRegistry())
        let up = await allUp.respond(to: HTTPRequest(method: .get, path: "/readyz"))
        #expect(up.status == .ok && up.headers["Retry-After"] == nil)
    }

    @Test("the router matches path parameters and renders JSON errors")
    func router() async {
        var router = Router()
        router.get("/materials/:id/reading-progress") { .json(["id": $0.pathParameters["id"] ?? ""]) }
        router.post("/echo") { request in
            struct Body: Codable { let n: Int }
            return .json(try request.decode(Body.self))
        }
        let ok = await router.respond(to: HTTPRequest(method: .get, path: "/materials/m-1/reading-progress"))
        #expect(String(decoding: ok.body, as: UTF8.self) == #"{"id":"m-1"}"#)
        let bad = await router.respond(to: HTTPRequest(method: .post, path: "/echo", body: Array("{nope".utf8)))
        #expect(bad.status == .badRequest)
        #expect(String(decoding: bad.body, as: UTF8.self).contains(#""code":"INVALID_JSON""#))
        #expect(await router.respond(to: HTTPRequest(method: .get, path: "/echo")).status == .methodNotAllowed)
        #expect(await router.respond(to: HTTPRequest(method: .get, path: "/nope")).status == .notFound)
        // Metrics are labelled by pattern, so ids do not multiply the series.
        #expect(router.pattern(for: .get, path: "/materials/m-1/reading-progress") == "/materials/:id/reading-progress")
        #expect(router.pattern(for: .head, path: "/materials/m-2/reading-progress") == "/materials/:id/reading-progress")
        #expect(router.pattern(for: .get, path: "/nope") == nil)
    }

    @Test("every request is a span of a trace: the caller's traceparent is continued (same trace id and flags, a new span), a malformed one is replaced, and a new trace is sampled at TRACE_SAMPLE_RATIO (0 by default, 0…1)")
    func requestTraces() async throws {
        var router = Router()
        router.get("/t") { _ in .json(["trace": TraceContext.current?.traceparent ?? ""]) }
        func answered(_ headers: HTTPHeaders, by router: Router) async throws -> TraceContext {
            let response = await router.respond(to: HTTPRequest(method: .get, path: "/t", headers: headers))
            return try #require(response.headers[TraceContext.responseHeader].flatMap(TraceContext.init(traceparent:)))
        }
        let caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let continued = try await answered([TraceContext.header: caller], by: router)
        #expect(continued.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && continued.sampled && continued.parentID != "00f067aa0ba902b7")
        let replaced = try await answered([TraceContext.header: "00-nothex-00f067aa0ba902b7-01"], by: router)
        #expect(replaced.traceID.count == 32 && !replaced.sampled)
        for _ in 0..<20 { #expect(try await !answered([:], by: router).sampled) }
        var sampling = router
        sampling.traceSampleRatio = 1
        for _ in 0..<20 { #expect(try await answered([:], by: sampling).sampled) }

        let base = ["KAFKA_BROKERS": "127.0.0.1:9092", "DATABASE_URL": "postgres://x", "JWT_SECRET": "0123456789abcdef"]
        var plain = EnvironmentReader(base)
        #expect(CommonConfiguration.read(from: &plain, defaultPort: 8080).traceSampleRatio == 0)
        var set = EnvironmentReader(base.merging(["TRACE_SAMPLE_RATIO": "0.01"]) { $1 })
        #expect(CommonConfiguration.read(from: &set, defaultPort: 8080).traceSampleRatio == 0.01)
        try set.validate()
        for wrong in ["-0.1", "1.5", "some"] {
            var reader = EnvironmentReader(base.merging(["TRACE_SAMPLE_RATIO": wrong]) { $1 })
            _ = CommonConfiguration.read(from: &reader, defaultPort: 8080)
            #expect(throws: ConfigurationError.self, "\(wrong)") { try reader.validate() }
        }
    }
}
