import Auth
import CEpoll
import Contracts
import DevInfrastructure
import Foundation
import Glibc
import JSON
import Kafka
import Lifecycle
import Postgres
import PrometheusMetrics
import RealtimeNotifier
import ServiceLogging
import ServiceRuntime
import Synchronization

/// `swift run -c release realtime-bench [connections] [channels] [events/s] [seconds] [client threads (Python processes with BENCH_CLIENT=python)]`
///
/// Starts an embedded Kafka broker, a PostgreSQL (a private cluster, or a fresh database on
/// `BENCH_DATABASE_URL`), one realtime-notifier in this process, and the load client holding
/// the connections: ``LoadClient`` (epoll threads in this process), or with
/// `BENCH_CLIENT=python` the older `load_client.py` processes, or with `BENCH_CLIENT=process`
/// ``LoadClient`` in a process of its own (``LoadClientProcess``: this executable again), so
/// that a profile of this process is the notifier's alone. Then it produces broadcasts at a
/// steady rate, round-robin over the channels, each carrying its publish time, and reports
/// delivered messages/s and publish-to-receive latency p50/p99.
@main
struct RealtimeBench {
    static func main() async throws {
        if CommandLine.arguments.dropFirst().first == LoadClientProcess.flag {
            exit(await LoadClientProcess.run(Array(CommandLine.arguments.dropFirst(2))))
        }
        let args = CommandLine.arguments.dropFirst().compactMap(Int.init)
        let connections = args.count > 0 ? args[0] : 2_000
        let channelCount = args.count > 1 ? args[1] : 20
        let rate = args.count > 2 ? args[2] : 500
        let seconds = args.count > 3 ? args[3] : 20
        let processes = args.count > 4 ? args[4] : 2
        let logger = Logger(label: "realtime-bench", level: .warning)
        print("realtime-bench: \(connections) connections, \(channelCount) channels, \(rate) events/s, \(seconds) s, \(processes) client threads/processes")

        let cluster = try EmbeddedKafkaCluster(brokers: 1, noDelay: ProcessInfo.processInfo.environment["BENCH_MOCK_NAGLE"] == nil,
                                               logger: .disabled)
        for topic in Topics.all { try cluster.createTopic(topic.name, partitions: topic.partitions) }
        var privateCluster: PrivatePostgresCluster?
        let databaseURL: String
        if let admin = ProcessInfo.processInfo.environment["BENCH_DATABASE_URL"] {
            let name = "rtbench_\(getpid())"
            let client = PostgresClient(configuration: PostgresConfiguration(url: admin, maxConnections: 1), logger: .disabled)
            _ = try await client.execute("DROP DATABASE IF EXISTS \(name)")
            _ = try await client.execute("CREATE DATABASE \(name)")
            await client.close()
            var components = URLComponents(string: admin)!
            components.path = "/" + name
            databaseURL = components.string!
        } else {
            let pg = PrivatePostgresCluster(directory: NSTemporaryDirectory() + "realtime-bench-pg-\(getpid())", logger: logger)
            databaseURL = try await pg.start()
            privateCluster = pg
        }

        let secret = "realtime-bench-secret-0123456789"
        let common = CommonConfiguration(kafkaBrokers: cluster.bootstrapServers, databaseURL: databaseURL, jwtSecret: secret,
                                         httpHost: "127.0.0.1", httpPort: 0, logLevel: .warning, databasePoolSize: 8, kafkaFetchWait: EmbeddedKafkaCluster.fetchWait)
        let context = try await ServiceHost.makeContext(name: "realtime-notifier", configuration: common, metrics: MetricsRegistry(), logger: logger)
        _ = try await PostgresMigrator(migrations: RealtimeNotifierService.migrations, logger: logger).migrate(context.database)
        // `fetch.wait.max.ms` of the notifier's consumers (the service's REALTIME_FETCH_WAIT_MS, default 5).
        let fetchWait = Duration.milliseconds(Int(ProcessInfo.processInfo.environment["REALTIME_FETCH_WAIT_MS"] ?? "") ?? 5)
        var realtime = RealtimeConfiguration(maxQueuedMessages: 4_096, fetchWait: fetchWait)
        // The notifier's REALTIME_WRITE_COALESCE_BYTES (0: one send() per message, as before 2026-12-06).
        if let bytes = ProcessInfo.processInfo.environment["REALTIME_WRITE_COALESCE_BYTES"].flatMap(Int.init) {
            realtime.coalescedWriteBytes = bytes
        }
        var service = RealtimeNotifierService(context: context, configuration: realtime)
        let port = Mutex<Int?>(nil)
        service.onListening = { bound in port.withLock { $0 = bound } }
        let parts = service.parts()
        let notifier = Task { try await ServiceHost.run(context: context, parts: parts, handlesSignals: false) }
        // Every wait below is bounded: a stuck phase fails the run, saying where it stopped.
        let setupDeadline = ContinuousClock.now + .seconds(60)
        func waitOrFail(_ phase: String, _ done: () -> Bool) async throws {
            while !done() {
                guard ContinuousClock.now < setupDeadline else {
                    throw BenchError(description: "\(phase) not done after 60 s (subscriptions \(service.hub.subscriptionCount), delivered \(service.hub.deliveredCount))")
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        try await waitOrFail("listening") { port.withLock { $0 } != nil }
        let url = "ws://127.0.0.1:\(port.withLock { $0! })/realtime/v1/websocket"

        // Channels are users' own channels, so any token for that user may join.
        let channels = (0..<channelCount).map { "user:bench\($0)" }
        let codec = JWTCodec(secret: secret)
        let perProcess = connections / processes
        // A service token may join every channel.
        let token = codec.issue(userID: "bench", ttl: 3600, role: "service")
        let python = ProcessInfo.processInfo.environment["BENCH_CLIENT"] == "python"
        let ownProcess = ProcessInfo.processInfo.environment["BENCH_CLIENT"] == "process"
        var clients: [(Process, Pipe, Pipe)] = []
        var swiftClient: LoadClient?
        let started = ContinuousClock.now
        if python {
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("load_client.py").path
            for index in 0..<processes {
                clients.append(try startClient("/usr/bin/env",
                                               ["python3", script, url, token, channels.joined(separator: ","), String(index * perProcess), String(perProcess)]))
            }
            try awaitReady(clients)
        } else if ownProcess {
            clients.append(try startClient(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
                                           [LoadClientProcess.flag, String(port.withLock { $0! }), "/realtime/v1/websocket?apikey=\(token)&vsn=2.0.0",
                                            String(perProcess * processes), String(processes), channels.joined(separator: ",")]))
            try awaitReady(clients)
        } else {
            let topics = (0..<perProcess * processes).map { "realtime:" + channels[$0 % channels.count] }
            let client = LoadClient(port: UInt16(port.withLock { $0! }), path: "/realtime/v1/websocket?apikey=\(token)&vsn=2.0.0",
                                    topics: topics, threads: processes)
            client.start()
            try await waitOrFail("joins (\(topics.count) sockets)") {
                client.failure != nil || client.ready >= topics.count
            }
            if let failure = client.failure { throw BenchError(description: "load client failed: \(failure)") }
            swiftClient = client
        }
        print("connected and joined: \(perProcess * processes) sockets in \(started.duration(to: .now)) (\(python ? "Python" : ownProcess ? "Swift epoll, own process" : "Swift epoll") client)")
        try await waitOrFail("subscriptions") { service.hub.subscriptionCount >= perProcess * processes }

        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers,
                                                                                   clientID: "bench-producer", lingerMilliseconds: 1,
                                                                                   extra: ["socket.nagle.disable": "true"]),
                                         logger: .disabled)
        // Warm-up: the consumer groups join, every channel's first event goes through (clients
        // ignore events without a publish time).
        for channel in channels {
            let value = RealtimeBroadcast(channel: channel, event: "warmup", payload: .object([:]))
            _ = try await producer.send(KafkaProducerRecord(topic: Topics.realtimeBroadcasts, key: Array(channel.utf8),
                                                            value: try ContractCoding.encode(value)))
        }
        let warmTarget = perProcess * processes
        try await waitOrFail("warm-up") { service.hub.deliveredCount >= warmTarget }
        try await Task.sleep(for: .seconds(1))
        print("warm-up delivered in \(started.duration(to: .now))")

        // Produce at a steady rate: a batch every 10 ms.
        let tick = Duration.milliseconds(10)
        let perTick = max(1, rate / 100)
        var produced = 0
        let clientPID = ownProcess ? clients.first?.0.processIdentifier : nil
        let cpuBefore = CPUSample.take(client: swiftClient, clientPID: clientPID)
        let begin = ContinuousClock.now
        var next = begin
        while ContinuousClock.now - begin < .seconds(seconds) {
            var records: [KafkaProducerRecord] = []
            let now = Date().timeIntervalSince1970 * 1000
            for _ in 0..<perTick {
                let channel = channels[produced % channels.count]
                let value = RealtimeBroadcast(channel: channel, event: "tick", payload: .object(["t": .number(now)]))
                records.append(KafkaProducerRecord(topic: Topics.realtimeBroadcasts, key: Array(channel.utf8), value: try ContractCoding.encode(value)))
                produced += 1
            }
            let batch = records
            Task { _ = await producer.send(batch) }
            next += tick
            try await Task.sleep(until: next, clock: .continuous)
        }
        let elapsed = ContinuousClock.now - begin
        let cpuAfter = CPUSample.take(client: swiftClient, clientPID: clientPID)
        try await Task.sleep(for: .seconds(3))  // drain

        var received = 0
        var errors = 0
        var histogram: [Int: Int] = [:]
        if let swiftClient {
            let totals = await swiftClient.stop()
            received = totals.received
            errors = totals.errors
            for (bucket, count) in totals.histogram.enumerated() where count > 0 { histogram[bucket] = count }
        }
        for (process, input, output) in clients {
            try input.fileHandleForWriting.close()
            let line = try readLine(output.fileHandleForReading)
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
            received += object["received"] as? Int ?? 0
            errors += object["errors"] as? Int ?? 0
            for (key, value) in object["histogram"] as? [String: Int] ?? [:] { histogram[Int(key) ?? 0, default: 0] += value }
            process.waitUntilExit()
        }
        let expected = produced * (perProcess * processes) / channels.count
        let window = elapsed.timeInterval
        print(String(format: "produced %d events in %.1f s (%.0f/s); expected deliveries %d; delivered %d (%.2f%%), errors %d",
                     produced, window, Double(produced) / window, expected, received, 100 * Double(received) / Double(max(expected, 1)), errors))
        print(String(format: "delivered msgs/s: %.0f", Double(received) / window))
        print(String(format: "latency p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms, max %.1f ms",
                     percentile(histogram, 0.50), percentile(histogram, 0.99), percentile(histogram, 0.999), percentile(histogram, 1.0)))
        print(cpuAfter.report(since: cpuBefore, messages: received, window: window))

        notifier.cancel()
        _ = await notifier.result
        await producer.shutdown()
        await context.producer.shutdown()
        await context.database.close()
        await privateCluster?.stop()
        cluster.shutdown()
    }

    /// CPU time of this process (the notifier, the embedded broker and, with the Swift client,
    /// the load client threads; with `BENCH_CLIENT=process`, plus the client's process) and of
    /// the whole machine, to read the latencies against.
    struct CPUSample {
        var process: Double
        var client: Double
        var machineBusy: Double
        var machineTotal: Double

        static func take(client: LoadClient?, clientPID: Int32? = nil) -> CPUSample {
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            let process = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
                + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
            // /proc/stat "cpu" line: user nice system idle iowait irq softirq steal …, in ticks.
            let fields = ((try? String(contentsOfFile: "/proc/stat", encoding: .utf8)) ?? "")
                .split(separator: "\n").first?.split(separator: " ").dropFirst().compactMap { Double($0) } ?? []
            let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
            let total = fields.prefix(8).reduce(0, +) / ticks
            let idle = fields.count > 4 ? (fields[3] + fields[4]) / ticks : 0
            if let clientPID {
                let own = LoadClientProcess.cpuSeconds(pid: clientPID)
                return CPUSample(process: process + own, client: own, machineBusy: total - idle, machineTotal: total)
            }
            return CPUSample(process: process, client: client?.cpuSeconds ?? 0, machineBusy: total - idle, machineTotal: total)
        }

        func report(since start: CPUSample, messages: Int, window: Double) -> String {
            let process = self.process - start.process
            let client = self.client - start.client
            let others = (machineBusy - start.machineBusy) - process
            return String(format: "cpu over the window: bench process %.2f cores (load client %.2f, rest %.2f = %.1f µs per delivered message); other processes %.2f cores; machine idle %.0f%%",
                          process / window, client / window, (process - client) / window,
                          (process - client) / Double(max(messages, 1)) * 1e6, others / window,
                          100 * (1 - (machineBusy - start.machineBusy) / max(machineTotal - start.machineTotal, 1e-9)))
        }
    }

    struct BenchError: Error, CustomStringConvertible {
        let description: String
    }

    /// Milliseconds at quantile `q` of a histogram of 0.1 ms buckets.
    static func percentile(_ histogram: [Int: Int], _ q: Double) -> Double {
        let total = histogram.values.reduce(0, +)
        guard total > 0 else { return .nan }
        let target = Int((Double(total) * q).rounded(.up))
        var seen = 0
        for bucket in histogram.keys.sorted() {
            seen += histogram[bucket]!
            if seen >= target { return Double(bucket) / 10 }
        }
        return Double(histogram.keys.max()!) / 10
    }

    /// A load client process started with its standard input and output piped to this one.
    static func startClient(_ executable: String, _ arguments: [String]) throws -> (Process, Pipe, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        return (process, input, output)
    }

    /// Waits for every client's "ready" line.
    static func awaitReady(_ clients: [(Process, Pipe, Pipe)]) throws {
        for (_, _, output) in clients {
            let line = try readLine(output.fileHandleForReading)
            guard line.contains("ready") else { throw BenchError(description: "load client failed: \(line)") }
        }
    }

    static func readLine(_ handle: FileHandle) throws -> String {
        var data = Data()
        while true {
            let byte = try handle.read(upToCount: 1) ?? Data()
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            data.append(byte)
        }
        return String(decoding: data, as: UTF8.self)
    }
}
