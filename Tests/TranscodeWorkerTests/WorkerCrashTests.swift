import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import ObjectStore
import Postgres
import Testing
@testable import TranscodeWorker

/// The `transcode-worker` executable SIGKILLed at random points while real RoomPlan scans
/// are in flight: leases run out, other processes take the jobs over, and every version ends
/// with the same files a clean run writes.
@Suite("transcode worker crash safety", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(5)))
struct WorkerCrashTests {
    static let fixtures: [(package: String, roomplan: String)] = [
        ("roomscan.usdz", "roomscan.roomplan.json"),
        ("roomscan_usdc.usdz", "roomscan_usdc.roomplan.json"),
        ("roomscan_open.usdz", "roomscan_open.roomplan.json"),
    ]

    /// The version's outputs: key relative to `rooms/{roomId}/{versionId}/` → size. The
    /// sources are the test's own uploads, so they are left out.
    static func outputs(_ store: any ObjectStore, _ request: RoomTranscodeRequest) async throws -> [String: Int64] {
        let base = "rooms/\(request.roomId)/\(request.versionId)/"
        var sizes: [String: Int64] = [:]
        for object in try await store.list(prefix: base) where object.key != request.source.usdzKey
            && object.key != request.source.roomplanJsonKey {
            sizes[String(object.key.dropFirst(base.count))] = object.size
        }
        return sizes
    }

    @Test("SIGKILL of the worker process five times while 20 scans are in flight: each version is ready once, with a clean run's files")
    func killNineMidTranscode() async throws {
        try await SeaweedFSFixture.with { s3 in
            let store = S3ObjectStore(configuration: s3)
            let harness = try await JobLifecycleTests.Harness()
            var rng = SplitMix64(state: 2027)

            // The clean run: one version of each fixture, in process, nobody killed.
            var expected: [String: [String: Int64]] = [:]
            var cleanRequests: [RoomTranscodeRequest] = []
            for fixture in Self.fixtures {
                cleanRequests.append(try await StorePipelineTests.upload(store, package: fixture.package, roomplan: fixture.roomplan,
                                                                         harness: harness))
            }
            let clean = harness.service(StoreTranscodePipeline(store: store, converter: RoomScanConverter(),
                                                               workDirectory: NSTemporaryDirectory(), maxJobBytes: 64 << 20),
                                        links: StoreOutputLinks(store: store, ttl: .seconds(300)), workerID: "clean")
            try await JobLifecycleTests.running(clean) { _ in
                try await harness.produce(cleanRequests)
                for request in cleanRequests {
                    #expect(try await Integration.eventually(timeout: .seconds(60)) {
                        try await harness.jobStatus(request.versionId) == "ready"
                    })
                }
            }
            for (fixture, request) in zip(Self.fixtures, cleanRequests) {
                expected[fixture.package] = try await Self.outputs(store, request)
                #expect(expected[fixture.package]?.keys.contains("layer_manifest.json") == true)
                #expect(expected[fixture.package]?.keys.contains("layers/walls.glb") == true)
            }

            // Twenty rooms, cycling through the fixtures, then the worker processes.
            var rooms: [(fixture: String, request: RoomTranscodeRequest)] = []
            for index in 0..<20 {
                let fixture = Self.fixtures[index % Self.fixtures.count]
                rooms.append((fixture.package, try await StorePipelineTests.upload(store, package: fixture.package,
                                                                                   roomplan: fixture.roomplan, harness: harness)))
            }
            var environment = s3.environment
            for (key, value) in [
                "KAFKA_BROKERS": harness.cluster.bootstrapServers, "DATABASE_URL": harness.database.url,
                "JWT_SECRET": JobLifecycleTests.secret, "ROOM_TRANSCODE_REQUESTS_TOPIC": harness.requests,
                "ROOM_TRANSCODE_STATUS_TOPIC": harness.statuses, "TRANSCODE_GROUP_ID": "transcode-crash",
                "TRANSCODE_LEASE_MS": "2000", "TRANSCODE_POLL_MS": "100", "TRANSCODE_OUTBOX_INTERVAL_MS": "300",
                "KAFKA_SESSION_TIMEOUT_MS": "6000",
            ] { environment[key] = value }

            // Each process gets four more rooms as it starts, so every kill finds work in flight.
            var kills = 0
            var inFlightAtKills: Int64 = 0
            for batch in 0..<5 {
                var env = environment
                env["HTTP_PORT"] = String(Integration.freePort())
                let process = try ServiceProcess(executable: "transcode-worker", environment: env)
                let earlier = try await harness.client.query(
                    "SELECT DISTINCT claimed_by FROM transcode_jobs WHERE claimed_by IS NOT NULL").map { try $0.decode(String.self, "claimed_by") }
                let others = "{" + earlier.joined(separator: ",") + "}"
                // Jobs this process holds: in flight, under a live lease no earlier process took.
                func holding() async throws -> Int64 {
                    try await harness.client.query(
                        "SELECT count(*)::bigint AS n FROM transcode_jobs WHERE status = 'transcoding' AND lease_until > now() "
                            + "AND claimed_by <> ALL($1::text[])", [others]).first?.decode(Int64.self, "n") ?? 0
                }
                try await harness.produce(rooms[(batch * 4)..<(batch * 4 + 4)].map(\.request))
                // The kill lands at a random point once this process has joined and started on a job.
                let working = try await Integration.eventually(timeout: .seconds(45), every: .milliseconds(50)) { try await holding() > 0 }
                #expect(working, "worker never claimed a job: \(process.log.suffix(2000))")
                // The last kill lands at once, so at least its job is left for the survivor (with
                // a random pause a quiet machine can finish all four rooms first).
                let pause = Int.random(in: 0...1500, using: &rng)
                if batch < 4 { try await Task.sleep(for: .milliseconds(pause)) }
                #expect(process.isRunning, "worker died on its own: \(process.log.suffix(2000))")
                inFlightAtKills += try await holding()
                process.kill()
                kills += 1
            }
            let readyBeforeSurvivor = try await harness.client.query(
                "SELECT count(*)::bigint AS n FROM transcode_jobs WHERE status = 'ready'").first?.decode(Int64.self, "n") ?? 0
            var env = environment
            env["HTTP_PORT"] = String(Integration.freePort())
            let survivor = try ServiceProcess(executable: "transcode-worker", environment: env)
            let allReady = try await Integration.eventually(timeout: .seconds(120), every: .milliseconds(300)) {
                let rows = try await harness.client.query("SELECT count(*)::bigint AS n FROM transcode_jobs WHERE status = 'ready'")
                return try rows.first?.decode(Int64.self, "n") == Int64(cleanRequests.count + rooms.count)
            }
            #expect(allReady, "worker log: \(survivor.log.suffix(2000))")
            let drained = try await Integration.eventually(timeout: .seconds(30)) {
                try await harness.client.query("SELECT 1 FROM transcode_status_outbox LIMIT 1").isEmpty
            }
            #expect(drained, "worker log: \(survivor.log.suffix(2000))")
            survivor.terminate()

            #expect(kills == 5)
            #expect(readyBeforeSurvivor < Int64(cleanRequests.count + rooms.count), "the kills cut into the work")
            #expect(inFlightAtKills > 0, "some kill hit a job mid-transcode, whose lease another process had to wait out")
            let jobs = try await harness.client.query(
                "SELECT version_id, status FROM transcode_jobs WHERE version_id = ANY($1::text[])",
                ["{" + rooms.map(\.request.versionId).joined(separator: ",") + "}"])
            #expect(jobs.count == rooms.count, "one job row per version")
            #expect(try jobs.allSatisfy { try $0.decode(String.self, "status") == "ready" })

            let published = try await harness.published()
            for room in rooms {
                let request = room.request
                let statuses = published[request.versionId] ?? []
                #expect(statuses.last?.status == .ready, "\(request.versionId): \(statuses.map(\.status))")
                // A kill between publishing and deleting an outbox row publishes that row again,
                // so a `ready` may be seen twice — but always the same one.
                let readies = Set(statuses.filter { $0.status == .ready })
                #expect(readies.count == 1, "\(request.versionId): one distinct ready, got \(readies.count)")
                let base = "rooms/\(request.roomId)/\(request.versionId)/"
                #expect(readies.first?.manifestKey == base + "layer_manifest.json")
                #expect(!statuses.contains { $0.status == .failed })
                #expect(try await Self.outputs(store, request) == expected[room.fixture],
                        "\(request.versionId) (\(room.fixture)): the files of a clean run")
            }
            await harness.close()
        }
    }
}
