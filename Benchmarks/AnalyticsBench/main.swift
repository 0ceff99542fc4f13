// analytics-bench: how fast the analytics read model aggregates a pre-filled topic, and
// how long each GET endpoint takes for a user with a year of history.
//
//     BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres swift run -c release analytics-bench [events] [batch size]
//
// Baselines in the same run: a COPY of the same rows into an event-log-shaped table, the
// runner's decode-only rate of the same topic, and the bare round trip of `SELECT 1`
// through the same pool.
import AnalyticsAggregator
import Auth
import BenchSupport
import Contracts
import Foundation
import HTTPRouting
import Kafka
import Postgres
import Projection
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime

let arguments = CommandLine.arguments.dropFirst()
let eventCount = arguments.first.flatMap(Int.init) ?? 100_000
let batchSize = arguments.dropFirst().first.flatMap(Int.init) ?? AnalyticsConfiguration().batchSize
let adminURL = BenchDatabase.defaultAdminURL

let database = try await BenchDatabase.create(adminURL: adminURL, prefix: "analytics_bench")
let client = PostgresClient(configuration: PostgresConfiguration(url: database.url, maxConnections: 4), logger: .disabled)
_ = try await PostgresMigrator(migrations: ProjectionSchema.migrations + AnalyticsSchema.migrations, logger: .disabled).migrate(client)

say("analytics-bench: \(eventCount) events, database \(database.name)")
let throughput = try await ThroughputBench(events: eventCount, batchSize: batchSize, database: client).run()
say(throughput.report)
let latency = try await LatencyBench(database: client).run()
say(latency.report)

await client.close()
await database.drop()

/// A report line on stdout, written at once (stdout is block-buffered when piped).
func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
