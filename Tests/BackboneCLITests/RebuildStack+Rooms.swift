@testable import BackboneCLI
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import Kafka
import Postgres
import ServiceLogging

/// The room side of the rebuild stack: the catalog's and the social layer's topics, the
/// transcode-worker that projects them, and a rebuild killed half-way.
extension RebuildCommandTests.Stack {
    /// `topics` with three partitions each, every service's tables, and `records` on their topics.
    func seedRooms(topics: [String], _ records: [KafkaProducerRecord]) async throws {
        for topic in topics { try cluster.createTopic(topic, partitions: 3) }
        _ = try await PostgresMigrator(migrations: ServiceCatalog.allMigrations, logger: .disabled).migrate(client)
        for result in await producer.send(records) { _ = try result.get() }
    }

    /// Puts the transcode worker's intake past every request now on its topic: only the catalog
    /// and the social layer project them (its job loop would otherwise transcode them and publish
    /// statuses of its own).
    func skipTranscodeJobs() async throws {
        let admin = try KafkaAdmin(bootstrapServers: cluster.bootstrapServers, logger: .disabled)
        for partition in Int32(0)..<3 {
            let high = try await admin.watermarks(topic: Topics.roomTranscodeRequests, partition: partition).high
            _ = try await client.execute("""
                INSERT INTO consumer_offsets (group_id, topic, partition, next_offset, owner) VALUES ('transcode-worker', $1, $2, $3, 'test')
                """, [Topics.roomTranscodeRequests, Int(partition), high])
        }
    }

    /// A transcode-worker's environment serving on `port` with no store: jobs of the requests
    /// written later wait on a transient failure.
    func storelessWorkerEnvironment(port: Int, _ extra: [String: String] = [:]) -> [String: String] {
        var env = environment
        env.merge(["HTTP_HOST": "127.0.0.1", "HTTP_PORT": String(port), "CATALOG_CACHE_TTL_MS": "0",
                   "S3_ENDPOINT": "http://127.0.0.1:\(Integration.freePort())", "S3_BUCKET": "rooms", "S3_ACCESS_KEY_ID": "k",
                   "S3_SECRET_ACCESS_KEY": "s", "TRANSCODE_MAX_BACKOFF_MS": "600000"]) { _, new in new }
        env.merge(extra) { _, new in new }
        return env
    }

    /// `group` has stored, in every partition of `topics`, the partition's high watermark (waits
    /// up to 60 s for it).
    func caughtUp(group: String, topics: [String]) async -> Bool {
        await Integration.eventually(timeout: .seconds(60)) {
            guard let admin = try? KafkaAdmin(bootstrapServers: self.cluster.bootstrapServers, logger: .disabled),
                  let rows = try? await self.client.query(
                      "SELECT topic, partition, next_offset FROM consumer_offsets WHERE group_id = $1", [group]) else { return false }
            var stored: [String: Int64] = [:]
            for row in rows {
                stored["\((try? row.decode(String.self, "topic")) ?? "")/\((try? row.decode(Int64.self, "partition")) ?? -1)"] =
                    (try? row.decode(Int64.self, "next_offset")) ?? -1
            }
            for topic in topics {
                for partition in Int32(0)..<3 {
                    guard let high = try? await admin.watermarks(topic: topic, partition: partition).high else { return false }
                    if high > 0, stored["\(topic)/\(partition)"] != high { return false }
                }
            }
            return true
        }
    }

    /// Starts `backbone rebuild <target> --batch 3` and kills it (SIGKILL) once its shadow holds
    /// positions past `records` records, or after 30 s; returns how many it had projected.
    func rebuildKilled(_ target: String, after records: Int64) async throws -> Int64 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Integration.executable("backbone"))
        process.arguments = ["rebuild", target, "--batch", "3"]
        process.environment = CLIProcess.environment(environment)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var done: Int64 = 0
        _ = await Integration.eventually(timeout: .seconds(30), every: .milliseconds(10)) {
            let rows = try? await self.client.query(
                "SELECT sum(next_offset - start_offset) AS n FROM rebuild_\(target).rebuild_positions")
            done = ((try? rows?.first?.decode(Int64?.self, "n")) ?? nil) ?? 0
            return done >= records
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        return done
    }
}
