import Auth
import BenchSupport
import Contracts
import DevInfrastructure
import Dispatch
import Foundation
import HTTPServer
import Ingest
import JSON
import Kafka
import Postgres
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime
import Synchronization

/// `swift run -c release IngestBench [BATCHES] [CONNECTIONS]`
///
/// In one run, over an embedded Kafka broker and PostgreSQL (`DATABASE_URL`, else a private
/// cluster in a temporary directory):
/// 1. raw: a plain librdkafka produce loop of the serialized `reading.events.v2` records
///    of every batch (idempotent, acks=all) — the floor;
/// 2. ingest, saturated: BATCHES batches of 100 events posted over CONNECTIONS keep-alive
///    connections to a live ingest (HTTP → validation → catalog/dedup → Kafka ack →
///    response), reporting accepted events/s and p50/p99 request latency;
/// 3. ingest, paced at half the saturated rate (open loop, latency from each request's
///    scheduled time), reporting p50/p99;
/// 4. the dedup ledger alone: the same number of 100-id lookups and inserts
///    (`AcceptedEventLedger`, CONNECTIONS at a time, fresh ids), no HTTP and no Kafka — the
///    PostgreSQL part of every accepted event — and, alternating with it, the previous
///    ledger design (`PreviousLedger`) on the same PostgreSQL;
/// 5. the ledger's statements of both designs inside PostgreSQL alone (a PL/pgSQL loop):
///    what the server spends per id, without the client and its round trips;
/// 6. where an accepted event's time goes: the handler's per-stage counters over the
///    saturated run, per event.
@main
struct IngestBench {
    static let eventsPerBatch = 100

    static func main() async throws {
        let arguments = CommandLine.arguments.dropFirst()
        let batches = arguments.first.flatMap(Int.init) ?? 400
        let connections = arguments.dropFirst().first.flatMap(Int.init) ?? 8
        let logger = Logger(label: "ingest-bench", level: .warning)

        let (url, privateCluster) = try await PrivatePostgresCluster.fromEnvironmentOrPrivate("ingest-bench", logger: logger)
        let kafka = try EmbeddedKafkaCluster(brokers: 1)
        for topic in ["bench.raw", "bench.events", "bench.rooms"] { try kafka.createTopic(topic, partitions: 6) }
        let database = PostgresClient(configuration: PostgresConfiguration(url: url, maxConnections: 8), logger: logger)
        for table in ["room_versions", "rooms", "room_upload_usage", "ingest_accepted_events", "materials", "schema_migrations"] {
            _ = try await database.execute("DROP TABLE IF EXISTS \(table)")
        }
        _ = try await PostgresMigrator(migrations: IngestSchema.migrations, logger: logger).migrate(database)
        _ = try await database.execute("INSERT INTO materials (material_id, reading_target_type) VALUES ('lesson-1', 'knowledgeSource')")

        let secret = "ingest-bench-secret-0123456789"
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: kafka.bootstrapServers,
                                                                                   clientID: "ingest-bench"), logger: logger)
        let admin = try KafkaAdmin(bootstrapServers: kafka.bootstrapServers, logger: logger)
        let context = ServiceContext(
            name: "ingest", configuration: CommonConfiguration(kafkaBrokers: kafka.bootstrapServers, databaseURL: url,
                                                               jwtSecret: secret, httpHost: "127.0.0.1", httpPort: 0, kafkaFetchWait: EmbeddedKafkaCluster.fetchWait),
            database: database, producer: producer, admin: admin, metrics: MetricsRegistry(), logger: logger)
        let configuration = IngestConfiguration(rateLimitPerSecond: 1e9, rateLimitBurst: 1_000_000_000,
                                                readingEventsTopic: "bench.events", roomTranscodeTopic: "bench.rooms")
        let parts = IngestService(context: context, configuration: configuration).parts()
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let http = HTTPService(name: "ingest", configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0),
                               router: parts.router, readiness: [], metrics: context.metrics, logger: logger) { portContinuation.yield($0) }
        let server = Task { try await http.run() }
        var port = 0
        for await p in ports { port = p; break }

        // Requests: fresh event ids everywhere, 500 users, the app's field names.
        let codec = JWTCodec(secret: secret)
        let tokens = (0..<500).map { codec.issue(userID: "user-\($0)", ttl: 86_400) }
        func makeBatches(_ count: Int) throws -> (requests: [[UInt8]], records: [(key: [UInt8], value: [UInt8])]) {
            let now = Date()
            var requests: [[UInt8]] = []
            var records: [(key: [UInt8], value: [UInt8])] = []
            for b in 0..<count {
                let user = b % tokens.count
                let items = (0..<eventsPerBatch).map { i in
                    ReadingEventUploadItem(
                        eventId: UUID().uuidString, clientSessionId: "session-\(b)", readingTargetType: .knowledgeSource,
                        materialId: "lesson-1", knowledgeBaseId: "kb-1", eventType: .heartbeat, position: .page(1 + i % 40, of: 40),
                        activeSecondsDelta: 15, clientTimestamp: now.addingTimeInterval(Double(i - 200)),
                        clientTimezoneOffsetMinutes: 480, sequence: i, platform: "iOS", appVersion: "2.3.0")
                }
                requests.append(LoadClient.request(path: "/learning/reading-events/batch", token: tokens[user],
                                                   body: try ContractCoding.encode(ReadingEventBatchRequest(events: items))))
                for item in items {
                    let record = ReadingEventRecord(userId: "user-\(user)", receivedAt: now, item: item)
                    records.append((Array("user-\(user)".utf8), record.json))
                }
            }
            return (requests, records)
        }

        print("preparing \(batches) batches of \(eventsPerBatch) events …")
        let saturated = try makeBatches(batches)
        let warmup = try makeBatches(2 * connections)
        _ = try await Load.run(port: port, requests: warmup.requests, connections: connections, batchesPerSecond: nil)

        // 1. raw librdkafka produce loop of the same serialized records.
        let records = saturated.records
        let bootstrap = kafka.bootstrapServers
        let rawSeconds = try await Load.onThread { try RawProduceBaseline.run(bootstrapServers: bootstrap, topic: "bench.raw", records: records) }
        let rawRate = Double(records.count) / rawSeconds

        // 2. ingest, saturated; the handler's per-stage counters and this process's CPU around it.
        let stageNames = ["admit", "parse", "validate", "catalog", "ledger_lookup", "encode", "produce", "ledger_record", "respond"]
        func stageTotals() -> [Double] {
            stageNames.map { context.metrics.value("ingest_batch_stage_seconds_total", labels: ["stage": $0]) ?? 0 }
        }
        let stagesBefore = stageTotals()
        let cpuBefore = processCPUSeconds()
        let full = try await Load.run(port: port, requests: saturated.requests, connections: connections, batchesPerSecond: nil)
        let fullCPU = processCPUSeconds() - cpuBefore
        let stageLabels = ["token, size, rate limit", "parse (yajl)", "validate, in-batch dedup", "catalog lookup",
                           "ledger lookup", "Kafka values (JSONWriter)", "produce → Kafka ack (wait)", "ledger record (COPY)",
                           "response body, counters"]
        let stageSeconds = Array(zip(stageLabels, zip(stageTotals(), stagesBefore).map { $0 - $1 }))
        let fullRate = Double(full.acceptedEvents) / full.seconds

        // 3. ingest at half the saturated rate, for about 10 s.
        let halfBatchesPerSecond = fullRate / 2 / Double(eventsPerBatch)
        let paced = try makeBatches(max(connections, Int(halfBatchesPerSecond * 10)))
        let half = try await Load.run(port: port, requests: paced.requests, connections: connections,
                                      batchesPerSecond: halfBatchesPerSecond)

        // 4. the dedup ledger alone, the current one and the previous design (one table, a
        // unique key and an accepted_at index, INSERT … ON CONFLICT from unnest), alternating.
        let ledger = AcceptedEventLedger(database: database, retentionDays: 30)
        let previous = try await PreviousLedger(database: database)
        var ledgerRates: [Double] = []
        var previousRates: [Double] = []
        for _ in 0..<2 {
            previousRates.append(try await ledgerAlone(batches: batches, connections: connections,
                                                       lookup: previous.alreadyAccepted, record: previous.record))
            ledgerRates.append(try await ledgerAlone(batches: batches, connections: connections,
                                                     lookup: { try await ledger.alreadyAccepted($0, earliestClientTimestamp: Date().addingTimeInterval(-300)) },
                                                     record: ledger.record))
        }
        let ledgerRate = ledgerRates.max() ?? 0
        let previousRate = previousRates.max() ?? 0
        // 5. the same statements run inside PostgreSQL (one PL/pgSQL loop, no client, no round
        // trips): 20 inserts and 20 lookups of 5,000 fresh ids (the coalesced size), each design.
        let serverNew = try await serverSideLedger(database, insert: """
            INSERT INTO ingest_accepted_events (event_id, user_id) SELECT id, 'user-1' FROM unnest(ids) AS t (id)
            """, lookup: """
            SELECT count(*) INTO n FROM ingest_accepted_events_find(ids, now() - interval '2 hours')
            """)
        // The by-day lookup before migration 107: one index probe per id.
        let serverProbe = try await serverSideLedger(database, insert: "n := 0", lookup: """
            SELECT count(*) INTO n FROM unnest(ids) AS k (id) CROSS JOIN LATERAL (SELECT 1 FROM ingest_accepted_events e
                WHERE e.event_id = k.id AND e.accepted_at >= now() - interval '2 hours' AND e.accepted_at < now() + interval '1 hour' LIMIT 1) AS f
            """)
        let serverPrevious = try await serverSideLedger(database, insert: """
            INSERT INTO bench_previous_ledger (event_id, user_id, accepted_at) SELECT id, 'user-1', now() FROM unnest(ids) AS t (id)
            ON CONFLICT (event_id) DO NOTHING
            """, lookup: "SELECT count(*) INTO n FROM bench_previous_ledger WHERE event_id = ANY(ids)")

        print("")
        print("batches × events                 \(batches) × \(eventsPerBatch), \(connections) connections, 2 cores, all on this machine")
        print(String(format: "raw librdkafka produce (floor)   %10.0f records/s  (%.2f s)", rawRate, rawSeconds))
        print(String(format: "ingest saturated (HTTP→Kafka ack)%10.0f events/s   (%.2f s; %d accepted, %d failed requests)",
                     fullRate, full.seconds, full.acceptedEvents, full.failures))
        print(String(format: "  request latency                p50 %6.1f ms   p99 %6.1f ms", full.percentile(0.5), full.percentile(0.99)))
        print(String(format: "ingest / raw                     %9.1f %%", 100 * fullRate / rawRate))
        print(String(format: "ingest at half rate (%.0f ev/s) p50 %6.1f ms   p99 %6.1f ms   (%d accepted, %d failed)",
                     Double(half.acceptedEvents) / half.seconds, half.percentile(0.5), half.percentile(0.99),
                     half.acceptedEvents, half.failures))
        print(String(format: "dedup ledger alone (PostgreSQL) %10.0f events/s   (best of %@; lookup + COPY per 100 ids, by-day partitions)",
                     ledgerRate, ledgerRates.map { String(format: "%.0f", $0) }.joined(separator: ", ")))
        print(String(format: "previous ledger alone           %10.0f events/s   (best of %@; lookup + INSERT … ON CONFLICT, one table)",
                     previousRate, previousRates.map { String(format: "%.0f", $0) }.joined(separator: ", ")))
        print(String(format: "ingest / ledger alone            %9.1f %%   (ledger now / previous %.2f×)",
                     100 * fullRate / ledgerRate, ledgerRate / previousRate))
        print(String(format: "ledger SQL inside PostgreSQL     now: insert %.2f + lookup %.2f µs/id = %.0f ids/s; previous: %.2f + %.2f µs/id = %.0f ids/s (%.2f×)",
                     serverNew.insert, serverNew.lookup, 1e6 / (serverNew.insert + serverNew.lookup),
                     serverPrevious.insert, serverPrevious.lookup, 1e6 / (serverPrevious.insert + serverPrevious.lookup),
                     (serverPrevious.insert + serverPrevious.lookup) / (serverNew.insert + serverNew.lookup)))
        print(String(format: "                                 by-day lookup as one probe per id (before migration 107): %.2f µs/id",
                     serverProbe.lookup))
        print("")
        /// Column-aligned stage names (`%-34@` does not pad on Linux).
        func label(_ text: String) -> NSString { text.padding(toLength: 34, withPad: " ", startingAt: 0) as NSString }
        print("where an accepted event's time goes (saturated run; wall-clock per event = per batch / \(eventsPerBatch))")
        let meanRequestMicros = full.latencies.reduce(0, +) / Double(max(1, full.latencies.count)) * 1000
        var handlerMicros = 0.0
        for (stage, seconds) in stageSeconds {
            let micros = seconds * 1e6 / Double(max(1, full.acceptedEvents))
            handlerMicros += micros
            print(String(format: "  %@ %8.2f µs  %5.1f %%", label(stage), micros,
                         100 * micros / (meanRequestMicros / Double(eventsPerBatch))))
        }
        let restMicros = meanRequestMicros / Double(eventsPerBatch) - handlerMicros
        print(String(format: "  %@ %8.2f µs  %5.1f %%", label("HTTP, queueing, client"), restMicros,
                     100 * restMicros / (meanRequestMicros / Double(eventsPerBatch))))
        print(String(format: "  %@ %8.2f µs  (mean request %.2f ms / %d events)", label("request latency per event"),
                     meanRequestMicros / Double(eventsPerBatch), meanRequestMicros / 1000, eventsPerBatch))
        print(String(format: "  %@ %8.2f µs  (1 / saturated rate: 2 cores, %d requests in flight)", label("throughput cost per event"),
                     1e6 / fullRate, connections))
        print(String(format: "  %@ %8.2f µs  (user+system of this process: ingest, broker, load; PostgreSQL not included)",
                     label("process CPU per event"), fullCPU * 1e6 / Double(max(1, full.acceptedEvents))))

        server.cancel()
        _ = await server.result
        await producer.shutdown()
        await database.close()
        kafka.shutdown()
        await privateCluster?.stop()
    }
}
