import Auth
import BenchSupport
import Contracts
import Foundation
import JSON
import Kafka
import Postgres
import RealtimeNotifier
import ServiceLogging
import Synchronization

/// `pipeline-bench [--step-seconds S] [--rates R1,R2,…] [--users N] [--subscribers N]
/// [--connections C] [--drain-seconds S]`
///
/// Against a running stack whose services are separate processes (`Benchmarks/pipeline/bench.sh`
/// starts one: ingest, progress projector, analytics aggregator, realtime notifier over the
/// infrastructure of `backbone dev --infra-only`), for each rate in events/s: batches of 100
/// reading events of many users posted at that fixed rate (open loop) for S seconds, while
/// - every consumer's lag is scraped from the services' `/metrics` (`kafka_consumer_lag`) every
///   250 ms, in records and in seconds (records over the topic's input rate, from its high
///   watermarks);
/// - a probe user posts a one-event batch every 500 ms and times POST → `GET
///   /materials/{id}/reading-progress` showing it, POST → `GET /learning/summary` counting it,
///   and POST → `progress_updated` on its WebSocket channel;
/// - SUBSCRIBERS load users are joined on `user:{id}` over the realtime WebSocket;
/// then up to `--drain-seconds` for every lag to return to zero. The sustainable rate is the
/// highest rate whose every consumer had p99 lag under 1 s and drained to zero.
///
/// Settings from the environment: `INGEST_URL`, `PROGRESS_URL`, `ANALYTICS_URL`, `REALTIME_URL`,
/// `JWT_SECRET`, `DATABASE_URL`, `KAFKA_BROKERS`; `PIPELINE_PIDS` (`name=pid,…`) for the CPU
/// used by each process over each step.
@main
struct PipelineBench {
    static let eventsPerBatch = 100

    struct Options: Equatable {
        var stepSeconds = 20.0
        var rates = [2_000, 5_000, 10_000, 15_000, 20_000, 30_000]
        var users = 2_000
        var subscribers = 100
        var connections = 16
        var drainSeconds = 30.0
    }

    struct UsageError: Error, CustomStringConvertible { let description: String }

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var rest = arguments[...]
        func value(_ flag: String) throws -> String {
            guard let v = rest.popFirst() else { throw UsageError(description: "\(flag) needs a value") }
            return v
        }
        func number(_ flag: String, _ range: ClosedRange<Double>) throws -> Double {
            guard let n = Double(try value(flag)), range.contains(n) else {
                throw UsageError(description: "\(flag) must be a number in \(range.lowerBound)…\(range.upperBound)")
            }
            return n
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--step-seconds": options.stepSeconds = try number(flag, 1...600)
            case "--drain-seconds": options.drainSeconds = try number(flag, 1...600)
            case "--users": options.users = Int(try number(flag, 1...1_000_000))
            case "--subscribers": options.subscribers = Int(try number(flag, 0...10_000))
            case "--connections": options.connections = Int(try number(flag, 1...1_000))
            case "--rates":
                let rates = try value(flag).split(separator: ",").map { Int($0) }
                guard !rates.isEmpty, rates.allSatisfy({ ($0 ?? 0) >= eventsPerBatch && ($0 ?? 0) <= 10_000_000 }) else {
                    throw UsageError(description: "--rates takes events/s (each ≥ \(eventsPerBatch)), comma-separated")
                }
                options.rates = rates.compactMap { $0 }
            default: throw UsageError(description: "unknown argument \(flag)")
            }
        }
        if options.subscribers > options.users { options.subscribers = options.users }
        return options
    }

    static func main() async throws {
        let options: Options
        do { options = try parse(Array(CommandLine.arguments.dropFirst())) } catch {
            FileHandle.standardError.write(Data("pipeline-bench: \(error)\n".utf8))
            exit(2)
        }
        let env = ProcessInfo.processInfo.environment
        func setting(_ key: String) -> String {
            guard let value = env[key], !value.isEmpty else {
                FileHandle.standardError.write(Data("pipeline-bench: \(key) is not set\n".utf8))
                exit(2)
            }
            return value
        }
        let logger = Logger(label: "pipeline-bench", level: .warning)
        let stack = Stack(ingest: setting("INGEST_URL"), progress: setting("PROGRESS_URL"), analytics: setting("ANALYTICS_URL"),
                          realtime: setting("REALTIME_URL"), secret: setting("JWT_SECRET"))
        let pids = Self.pids(env["PIPELINE_PIDS"] ?? "") + [("load generator", getpid())]
        let database = PostgresClient(configuration: PostgresConfiguration(url: setting("DATABASE_URL"), maxConnections: 1), logger: logger)
        _ = try await database.execute("""
            INSERT INTO materials (material_id, reading_target_type, knowledge_base_id)
            VALUES ('bench-lesson', 'knowledgeSource', 'kb-bench'), ('bench-probe', 'knowledgeSource', 'kb-bench')
            ON CONFLICT (material_id) DO NOTHING
            """)
        let stageCPU = StageCPU(database: database, pids: pids)
        let admin = try KafkaAdmin(bootstrapServers: setting("KAFKA_BROKERS"), logger: logger)
        let watermarks = Watermarks(admin: admin, topics: [Topics.readingEvents, Topics.readingProgress])
        try await watermarks.load()

        let codec = JWTCodec(secret: stack.secret)
        let tokens = (0..<options.users).map { codec.issue(userID: "bench-user-\($0)", ttl: 86_400) }
        // Subscribed clients, as the app keeps them open, counting what arrives.
        let delivered = Counter()
        var subscribers: [RealtimeClient] = []
        for user in 0..<options.subscribers {
            let client = try await RealtimeClient.connect(to: stack.realtime, token: tokens[user], logger: logger)
            try await client.join("user:bench-user-\(user)")
            subscribers.append(client)
            Task { for await _ in client.events { delivered.value.add(1, ordering: .relaxed) } }
        }
        let probe = try await Probe(stack: stack, codec: codec, logger: logger)

        print("pipeline-bench: \(options.rates.count) steps of \(Int(options.stepSeconds)) s, \(options.users) users, "
              + "\(options.subscribers) subscribed WebSocket clients, \(options.connections) connections, "
              + "batches of \(eventsPerBatch); load average \(loadAverage())")
        // Warm-up (not reported): connections, prepared statements, the catalog cache.
        var warmup = options
        warmup.stepSeconds = 5
        _ = try await Step.run(rate: min(1_000, options.rates[0]), options: warmup, stack: stack, tokens: tokens, probe: probe,
                               watermarks: watermarks, cpu: stageCPU, delivered: delivered)
        var steps: [StepResult] = []
        for rate in options.rates {
            let step = try await Step.run(rate: rate, options: options, stack: stack, tokens: tokens, probe: probe,
                                          watermarks: watermarks, cpu: stageCPU, delivered: delivered)
            step.printSummary()
            fflush(nil)  // each step's lines as they come, also through a pipe
            steps.append(step)
        }
        Report.print(steps)
        for client in subscribers { await client.close() }
        await probe.close()
        await database.close()
    }

    static func pids(_ text: String) -> [(name: String, pid: Int32)] {
        text.split(separator: ",").compactMap { pair in
            let parts = pair.split(separator: "=")
            guard parts.count == 2, let pid = Int32(parts[1]) else { return nil }
            return (String(parts[0]), pid)
        }
    }

    static func loadAverage() -> String {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
    }
}

final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

struct Stack: Sendable {
    let ingest: String
    let progress: String
    let analytics: String
    let realtime: String
    let secret: String

    static func port(_ url: String) -> Int { Int(url.split(separator: ":").last?.prefix { $0.isNumber } ?? "") ?? 0 }
}

/// The batch bodies of the load: one template of 100 events per session, fresh event ids
/// written over the template's placeholder ids for every batch.
struct BatchTemplate: Sendable {
    let bytes: [UInt8]
    let idOffsets: [Int]

    init(session: Int, now: Date) throws {
        let placeholder = { (i: Int) in String(format: "00000000-0000-4000-8000-%012d", i) }
        let items = (0..<PipelineBench.eventsPerBatch).map { i in
            ReadingEventUploadItem(
                eventId: placeholder(i), clientSessionId: "bench-session-\(session)", readingTargetType: .knowledgeSource,
                materialId: "bench-lesson", knowledgeBaseId: "kb-bench", eventType: .heartbeat, position: .page(1 + i % 40, of: 40),
                activeSecondsDelta: 15, clientTimestamp: now.addingTimeInterval(Double(i - 100)),
                clientTimezoneOffsetMinutes: 480, sequence: i, platform: "iOS", appVersion: "2.3.0")
        }
        bytes = try ContractCoding.encode(ReadingEventBatchRequest(events: items))
        var offsets: [Int] = []
        for i in 0..<PipelineBench.eventsPerBatch {
            let needle = Array(placeholder(i).utf8)
            var found: Int?
            for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] && Array(bytes[start..<(start + needle.count)]) == needle {
                found = start
                break
            }
            guard let found else { throw PipelineBench.UsageError(description: "template without its event id") }
            offsets.append(found)
        }
        idOffsets = offsets
    }

    func batch() -> [UInt8] {
        var body = bytes
        for offset in idOffsets {
            let id = UUID().uuidString.utf8
            body.replaceSubrange(offset..<(offset + 36), with: id)
        }
        return body
    }
}

/// High watermarks of the consumed topics, summed over partitions (the input rate of a consumer).
final class Watermarks: Sendable {
    let admin: KafkaAdmin
    let topics: [String]
    private let partitions = Mutex<[String: [Int32]]>([:])

    init(admin: KafkaAdmin, topics: [String]) {
        self.admin = admin
        self.topics = topics
    }

    func load() async throws {
        let metadata = try await admin.listTopics()
        var found: [String: [Int32]] = [:]
        for topic in metadata where topics.contains(topic.name) { found[topic.name] = topic.partitions }
        partitions.withLock { $0 = found }
    }

    func highs() async -> [String: Int64] {
        let all = partitions.withLock { $0 }
        var highs: [String: Int64] = [:]
        for (topic, ids) in all {
            var sum: Int64 = 0
            for id in ids { sum += (try? await admin.watermarks(topic: topic, partition: id).high) ?? 0 }
            highs[topic] = sum
        }
        return highs
    }
}

/// One user of its own, posting a one-event batch (1 active second, the next page) and timing
/// when the three read paths show it.
final class Probe: Sendable {
    struct Timing: Sendable {
        /// Seconds from the POST being sent; nil if not seen within the bound.
        var get: Double?
        var summary: Double?
        var websocket: Double?
    }

    let stack: Stack
    let token: String
    let realtime: RealtimeClient
    private let arrivals = Mutex<[(at: ContinuousClock.Instant, total: Int)]>([])
    private let sent = Atomic<Int>(0)
    private let baseProgress: Int
    private let baseSummary: Int
    static let user = "bench-probe-user"
    static let bound = 15.0

    init(stack: Stack, codec: JWTCodec, logger: Logger) async throws {
        self.stack = stack
        token = codec.issue(userID: Self.user, ttl: 86_400)
        realtime = try await RealtimeClient.connect(to: stack.realtime, token: token, logger: logger)
        try await realtime.join("user:\(Self.user)")
        let token = token
        (baseProgress, baseSummary) = try await Load.onThread {
            let progress = try LoadClient(port: Stack.port(stack.progress))
            let analytics = try LoadClient(port: Stack.port(stack.analytics))
            let p = Self.number("totalActiveSeconds", try progress.exchange(LoadClient.get(path: "/materials/bench-probe/reading-progress", token: token)).body) ?? 0
            let s = Self.number("todayActiveSeconds", try analytics.exchange(LoadClient.get(path: "/learning/summary", token: token)).body) ?? 0
            return (p, s)
        }
        let events = realtime.events
        Task { [self] in
            for await event in events {
                guard case .broadcast(let b) = event, b.event == "progress_updated", b.payload["materialId"]?.stringValue == "bench-probe",
                      let total = b.payload["totalActiveSeconds"]?.numberValue else { continue }
                self.arrivals.withLock { $0.append((ContinuousClock.now, Int(total))) }
            }
        }
    }

    static func number(_ key: String, _ body: [UInt8]) -> Int? {
        let text = String(decoding: body, as: UTF8.self)
        guard let range = text.range(of: "\"\(key)\":") else { return nil }
        return Int(text[range.upperBound...].prefix { $0.isNumber })
    }

    /// Posts the next probe event and waits (bounded) for all three to show it.
    func measure() async throws -> Timing {
        let k = sent.add(1, ordering: .relaxed).newValue
        let body = try ContractCoding.encode(ReadingEventBatchRequest(events: [ReadingEventUploadItem(
            eventId: UUID().uuidString, clientSessionId: "bench-probe-session", readingTargetType: .knowledgeSource,
            materialId: "bench-probe", knowledgeBaseId: "kb-bench", eventType: .heartbeat, position: .page(1 + k % 40, of: 40),
            activeSecondsDelta: 1, clientTimestamp: Date(), clientTimezoneOffsetMinutes: 0, sequence: k,
            platform: "iOS", appVersion: "2.3.0")]))
        let stack = stack, token = token
        let expectedProgress = baseProgress + k, expectedSummary = baseSummary + k
        let start = ContinuousClock.now
        let posted = try await Load.onThread {
            let ingest = try LoadClient(port: Stack.port(stack.ingest))
            return try ingest.exchange(LoadClient.request(path: "/learning/reading-events/batch", token: token, body: body)).status
        }
        guard posted == 200 else { return Timing() }
        async let get = Self.poll(port: Stack.port(stack.progress), path: "/materials/bench-probe/reading-progress", token: token,
                                  key: "totalActiveSeconds", atLeast: expectedProgress, since: start)
        async let summary = Self.poll(port: Stack.port(stack.analytics), path: "/learning/summary", token: token,
                                      key: "todayActiveSeconds", atLeast: expectedSummary, since: start)
        var websocket: Double?
        while websocket == nil, Load.seconds(ContinuousClock.now - start) < Self.bound {
            if let at = arrivals.withLock({ $0.first { $0.total >= expectedProgress }?.at }) {
                websocket = Load.seconds(at - start)
            } else {
                try await Task.sleep(for: .milliseconds(2))
            }
        }
        return Timing(get: try await get, summary: try await summary, websocket: websocket)
    }

    private static func poll(port: Int, path: String, token: String, key: String, atLeast: Int,
                             since start: ContinuousClock.Instant) async throws -> Double? {
        try await Load.onThread {
            let client = try LoadClient(port: port)
            let request = LoadClient.get(path: path, token: token)
            while Load.seconds(ContinuousClock.now - start) < bound {
                if let n = number(key, try client.exchange(request).body), n >= atLeast {
                    return Load.seconds(ContinuousClock.now - start)
                }
                Thread.sleep(forTimeInterval: 0.002)
            }
            return nil
        }
    }

    func close() async { await realtime.close() }
}

/// Lag samples of every consumer group, per topic, from the services' `/metrics`.
struct LagSample: Sendable {
    var at: ContinuousClock.Instant
    /// "group topic" → records behind, summed over partitions.
    var lag: [String: Int64]
    /// `projection_records_skipped_total` of every service, summed: records the broker removed
    /// before a consumer read them (the embedded broker keeps 5 MB a partition), which would
    /// otherwise pass for a lag that went back to zero.
    var skipped: Int64
}

func scrapeLag(_ ports: [Int]) -> (lag: [String: Int64], skipped: Int64) {
    var lag: [String: Int64] = [:]
    var skipped: Int64 = 0
    for port in ports {
        guard let client = try? LoadClient(port: port),
              let response = try? client.exchange(Array("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)) else { continue }
        for line in String(decoding: response.body, as: UTF8.self).split(separator: "\n") {
            let isSkipped = line.hasPrefix("projection_records_skipped_total{")
            guard isSkipped || line.hasPrefix("kafka_consumer_lag{"),
                  let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
            if isSkipped {
                skipped += Int64(value)
                continue
            }
            func label(_ name: String) -> String? {
                guard let r = line.range(of: "\(name)=\"") else { return nil }
                return String(line[r.upperBound...].prefix { $0 != "\"" })
            }
            guard let group = label("group"), let topic = label("topic") else { continue }
            lag["\(group) \(topic)", default: 0] += Int64(value)
        }
    }
    return (lag, skipped)
}

func percentile(_ values: [Double], _ p: Double) -> Double? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * p).rounded(.up)) - 1))]
}

struct ConsumerLag: Sendable {
    var name: String
    var records: (p50: Double, p99: Double, max: Double)
    var seconds: (p50: Double, p99: Double, max: Double)
    /// Seconds after the load stopped until the lag was zero; nil if it was not within the bound.
    var drainedAfter: Double?
}

struct StepResult: Sendable {
    var rate: Int
    var acceptedPerSecond: Double
    var failedRequests: Int
    var postP50: Double
    var postP99: Double
    var consumers: [ConsumerLag]
    /// Records the consumers never read because the broker had removed them.
    var skipped: Int64
    var get: [Double]
    var summary: [Double]
    var websocket: [Double]
    var probes: Int
    var cpu: [(name: String, cores: Double)]
    /// CPU of each stage per accepted event (µs), its PostgreSQL backends included.
    var perEvent: [(name: String, micros: Double)]
    var deliveredPerSecond: Double
    var loadAverage: String

    var sustainable: Bool {
        !consumers.isEmpty && consumers.allSatisfy { $0.seconds.p99 < 1 && $0.drainedAfter != nil } && failedRequests == 0 && skipped == 0
    }

    /// CPU of the whole machine's share of the pipeline (every stage, PostgreSQL, the broker and
    /// the load generator) per accepted event.
    var totalMicros: Double { perEvent.map(\.micros).reduce(0, +) }
    /// The rate at which the pipeline, at this step's cost per event, would use every core.
    var ceiling: Double { totalMicros > 0 ? Double(Self.cores) * 1e6 / totalMicros : 0 }
    static var cores: Int { ProcessInfo.processInfo.activeProcessorCount }

    /// Each stage's µs per event split into its own process and the PostgreSQL backends it
    /// opened (what `perEvent` adds to the process's CPU); PostgreSQL's shared rest stays whole.
    var splitMicros: [(name: String, process: Double, backends: Double)] {
        zip(cpu, perEvent).map { process, stage in
            let own = acceptedPerSecond > 0 ? process.cores / acceptedPerSecond * 1e6 : 0
            return stage.name.hasPrefix("postgres") ? (stage.name, stage.micros, 0) : (stage.name, own, max(0, stage.micros - own))
        }
    }

    static func ms(_ v: Double?) -> String { v.map { String(format: "%.0f", $0 * 1000) } ?? "–" }

    func printSummary() {
        print(String(format: "rate %6d ev/s: accepted %8.0f ev/s, %d failed requests, POST p50 %.1f ms p99 %.1f ms; load average %@",
                     rate, acceptedPerSecond, failedRequests, postP50, postP99, loadAverage))
        for c in consumers {
            print(String(format: "  lag %-44@ records p50 %7.0f p99 %7.0f max %7.0f | seconds p50 %5.2f p99 %5.2f max %5.2f | zero after %@",
                         c.name as NSString, c.records.p50, c.records.p99, c.records.max, c.seconds.p50, c.seconds.p99, c.seconds.max,
                         c.drainedAfter.map { String(format: "%.1f s", $0) } ?? "NOT drained"))
        }
        print("  probes \(probes): POST→GET p50 \(Self.ms(percentile(get, 0.5))) p99 \(Self.ms(percentile(get, 0.99))) ms (\(get.count) seen), "
              + "POST→summary p50 \(Self.ms(percentile(summary, 0.5))) p99 \(Self.ms(percentile(summary, 0.99))) ms (\(summary.count)), "
              + "POST→progress_updated p50 \(Self.ms(percentile(websocket, 0.5))) p99 \(Self.ms(percentile(websocket, 0.99))) ms (\(websocket.count))")
        print("  CPU (cores) " + cpu.map { String(format: "%@ %.2f", $0.name, $0.cores) }.joined(separator: ", ")
              + String(format: "; WebSocket messages delivered %.0f/s", deliveredPerSecond))
        print("  CPU per accepted event (µs; each service with its PostgreSQL backends) "
              + perEvent.map { String(format: "%@ %.0f", $0.name, $0.micros) }.joined(separator: ", ")
              + String(format: "; total %.0f µs → at most %.0f events/s on %d cores", totalMicros, ceiling, Self.cores))
        print("    of which the service's own process / its PostgreSQL backends (µs) " + splitMicros.map {
            String(format: "%@ %.1f / %.1f", $0.name, $0.process, $0.backends)
        }.joined(separator: ", "))
        if skipped > 0 { print("  records the broker removed before a consumer read them: \(skipped)") }
        print("  sustainable: \(sustainable ? "yes" : "no")")
    }
}

enum Step {
    static func run(rate: Int, options: PipelineBench.Options, stack: Stack, tokens: [String], probe: Probe,
                    watermarks: Watermarks, cpu: StageCPU, delivered: Counter) async throws -> StepResult {
        let now = Date()
        let templates = try (0..<50).map { try BatchTemplate(session: $0, now: now) }
        let batchesPerSecond = Double(rate) / Double(PipelineBench.eventsPerBatch)
        let count = max(1, Int(batchesPerSecond * options.stepSeconds))
        let ports = [Stack.port(stack.progress), Stack.port(stack.analytics), Stack.port(stack.realtime)]

        let highsBefore = await watermarks.highs()
        let cpuBefore = await cpu.read()
        let deliveredBefore = delivered.value.load(ordering: .relaxed)
        let samples = Mutex<[LagSample]>([])
        let stop = Atomic<Bool>(false)
        let sampler = Task {
            while !stop.load(ordering: .relaxed) {
                let scraped = try await Load.onThread { scrapeLag(ports) }
                samples.withLock { $0.append(LagSample(at: .now, lag: scraped.lag, skipped: scraped.skipped)) }
                try await Task.sleep(for: .milliseconds(250))
            }
        }
        let probes = Task {
            var timings: [Task<Probe.Timing, any Error>] = []
            let end = ContinuousClock.now + .seconds(options.stepSeconds)
            while ContinuousClock.now < end {
                timings.append(Task { try await probe.measure() })
                try await Task.sleep(for: .milliseconds(500))
            }
            var results: [Probe.Timing] = []
            for t in timings { if let r = try? await t.value { results.append(r) } }
            return results
        }
        let users = tokens.count
        let start = ContinuousClock.now
        let load = try await Load.run(port: Stack.port(stack.ingest), count: count, connections: options.connections,
                                      batchesPerSecond: batchesPerSecond) { index in
            LoadClient.request(path: "/learning/reading-events/batch", token: tokens[(index * 7) % users], body: templates[index % templates.count].batch())
        }
        let loadEnd = ContinuousClock.now
        let cpuAfter = await cpu.read()
        let deliveredAfter = delivered.value.load(ordering: .relaxed)
        let highsAfter = await watermarks.highs()
        let loadSeconds = Load.seconds(loadEnd - start)

        // Drain: until every lag is zero in two samples in a row, or the bound.
        var drainedAt: [String: ContinuousClock.Instant] = [:]
        while Load.seconds(ContinuousClock.now - loadEnd) < options.drainSeconds {
            try await Task.sleep(for: .milliseconds(250))
            let recent = samples.withLock { Array($0.suffix(2)) }
            guard recent.count == 2, recent[0].at > loadEnd else { continue }
            let keys = Set(recent.flatMap(\.lag.keys))
            for key in keys where drainedAt[key] == nil && recent.allSatisfy({ ($0.lag[key] ?? 0) == 0 }) { drainedAt[key] = recent[0].at }
            if !keys.isEmpty && keys.allSatisfy({ drainedAt[$0] != nil }) { break }
        }
        stop.store(true, ordering: .relaxed)
        _ = await sampler.result
        let timings = try await probes.value

        let all = samples.withLock { $0 }
        let during = all.filter { $0.at <= loadEnd }
        var consumers: [ConsumerLag] = []
        // The consumers of the reading pipeline (the notifier's group also reads the room topics, idle here).
        for key in Set(all.flatMap(\.lag.keys)).sorted() {
            let topic = String(key.split(separator: " ").last ?? "")
            guard watermarks.topics.contains(topic) else { continue }
            let inputRate = Double((highsAfter[topic] ?? 0) - (highsBefore[topic] ?? 0)) / loadSeconds
            let records = during.map { Double($0.lag[key] ?? 0) }
            let seconds = records.map { inputRate > 0 ? $0 / inputRate : 0 }
            consumers.append(ConsumerLag(
                name: key,
                records: (percentile(records, 0.5) ?? 0, percentile(records, 0.99) ?? 0, records.max() ?? 0),
                seconds: (percentile(seconds, 0.5) ?? 0, percentile(seconds, 0.99) ?? 0, seconds.max() ?? 0),
                drainedAfter: drainedAt[key].map { max(0, Load.seconds($0 - loadEnd)) }))
        }
        let processSeconds = cpu.pids.map { ($0.name, (cpuAfter.processes[$0.name] ?? 0) - (cpuBefore.processes[$0.name] ?? 0)) }
        let stageSeconds = cpu.used(from: cpuBefore, to: cpuAfter)
        let events = Double(max(1, load.acceptedEvents))
        return StepResult(
            rate: rate, acceptedPerSecond: Double(load.acceptedEvents) / loadSeconds, failedRequests: load.failures,
            postP50: load.percentile(0.5), postP99: load.percentile(0.99), consumers: consumers,
            skipped: (all.last?.skipped ?? 0) - (all.first?.skipped ?? 0),
            get: timings.compactMap(\.get), summary: timings.compactMap(\.summary), websocket: timings.compactMap(\.websocket),
            probes: timings.count,
            cpu: processSeconds.map { (name: $0.0, cores: $0.1 / loadSeconds) },
            perEvent: stageSeconds.map { (name: $0.name, micros: $0.seconds / events * 1e6) },
            deliveredPerSecond: Double(deliveredAfter - deliveredBefore) / loadSeconds,
            loadAverage: PipelineBench.loadAverage())
    }
}

enum Report {
    static func print(_ steps: [StepResult]) {
        Swift.print("")
        Swift.print("| offered ev/s | accepted ev/s | POST p99 ms | " + (steps.first?.consumers.map { "lag \($0.name.split(separator: " ").first ?? "") p50/p99/max records (s)" } ?? []).joined(separator: " | ")
                    + " | POST→GET p50/p99 ms | POST→summary p50/p99 ms | POST→WS p50/p99 ms | CPU cores | sustainable |")
        Swift.print("|" + String(repeating: "---|", count: 8 + (steps.first?.consumers.count ?? 0)))
        for s in steps {
            let lags = s.consumers.map { c in
                String(format: "%.0f/%.0f/%.0f (%.2f/%.2f/%.2f)%@", c.records.p50, c.records.p99, c.records.max,
                       c.seconds.p50, c.seconds.p99, c.seconds.max, c.drainedAfter == nil ? " not drained" : "")
            }
            let cpu = s.cpu.map { String(format: "%@ %.2f", $0.name, $0.cores) }.joined(separator: ", ")
            Swift.print("| \(s.rate) | \(String(format: "%.0f", s.acceptedPerSecond)) | \(String(format: "%.1f", s.postP99)) | "
                        + lags.joined(separator: " | ")
                        + " | \(StepResult.ms(percentile(s.get, 0.5)))/\(StepResult.ms(percentile(s.get, 0.99)))"
                        + " | \(StepResult.ms(percentile(s.summary, 0.5)))/\(StepResult.ms(percentile(s.summary, 0.99)))"
                        + " | \(StepResult.ms(percentile(s.websocket, 0.5)))/\(StepResult.ms(percentile(s.websocket, 0.99)))"
                        + " | \(cpu) | \(s.sustainable ? "yes" : "no") |")
        }
        let sustainable = steps.filter(\.sustainable).map(\.rate).max()
        Swift.print("")
        Swift.print("pipeline sustainable rate: \(sustainable.map { "\($0) events/s" } ?? "none of the steps")")
        Swift.print("pipeline-sustainable=\(sustainable ?? 0)")
        // What the cores allow: at the cost per event of the highest sustainable step (the batches
        // of a faster step are larger and cheaper per event, so this is the step closest to the knee).
        if let step = steps.filter(\.sustainable).max(by: { $0.rate < $1.rate }) {
            Swift.print("")
            Swift.print("CPU per accepted event at \(step.rate) events/s (µs), each service with its PostgreSQL backends:")
            for stage in step.perEvent {
                let name = stage.name.padding(toLength: 22, withPad: " ", startingAt: 0)
                Swift.print(String(format: "  %@ %6.0f µs  (%5.1f %%)  alone on %d cores: %8.0f events/s", name, stage.micros,
                                   100 * stage.micros / step.totalMicros, StepResult.cores, stage.micros > 0 ? Double(StepResult.cores) * 1e6 / stage.micros : 0))
            }
            Swift.print(String(format: "  total                  %6.0f µs: on %d cores the pipeline cannot pass %.0f events/s", step.totalMicros, StepResult.cores, step.ceiling))
            Swift.print(String(format: "pipeline-cpu-ceiling=%.0f", step.ceiling))
        }
    }
}
