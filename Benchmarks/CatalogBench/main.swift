// catalog-bench: the room catalog's feed (`GET /rest/v1/rooms?visibility=eq.public&order=…&limit=20`)
// over 100,000 rooms, at 1,000 keep-alive connections (wrk), next to `/healthz` of the same
// server in the same run (the HTTP stack's own floor on this machine).
//
//     BENCH_DATABASE_URL=postgres://… (or TEST_DATABASE_URL) swift run -c release catalog-bench [rooms] [connections] [seconds]
//
// The rooms are projected through the catalog's own projection (the SQL the service runs);
// links are presigned by the real SigV4 signer. Two servers answer: the catalog as deployed
// (answers cached until the read model changes, at most 1 s) and the same with the cache
// off (every GET queries PostgreSQL and presigns its links).
import Auth
import BenchSupport
import Contracts
import Foundation
import HTTPRouting
import HTTPServer
import Lifecycle
import ObjectStore
import Postgres
import Projection
import PrometheusMetrics
import ServiceLogging
import ServiceRuntime
import TranscodeWorker

let arguments = CommandLine.arguments.dropFirst().compactMap(Int.init)
let roomCount = arguments.count > 0 ? arguments[0] : 100_000
let connections = arguments.count > 1 ? arguments[1] : 1_000
let duration = arguments.count > 2 ? arguments[2] : 10

func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }

let database = try await BenchDatabase.create(adminURL: BenchDatabase.defaultAdminURL, prefix: "catalog_bench")
let client = database.client(maxConnections: 8)
_ = try await PostgresMigrator(migrations: ProjectionSchema.migrations + CatalogSchema.migrations, logger: .disabled).migrate(client)

// Seed: a request, `queued` and `ready` per room, through the projection, 2,000 rooms a batch.
var configuration = CatalogConfiguration()
let secret = "catalog-bench-secret-0123456789abcdef"
let store = S3ObjectStore(configuration: S3Configuration(endpoint: "http://127.0.0.1:8333", bucket: "rooms",
                                                         accessKeyId: "bench", secretAccessKey: "bench-secret"))
let links = StoreOutputLinks(store: store, ttl: .seconds(900))
let cached = RoomCatalog(database: client, authenticator: RequestAuthenticator(secret: secret), links: links,
                         configuration: configuration, linkTTL: .seconds(900))
configuration.cacheTTL = .zero
let uncached = RoomCatalog(database: client, authenticator: RequestAuthenticator(secret: secret), links: links,
                           configuration: configuration, linkTTL: .seconds(900))
let projection = cached.projection(requestsTopic: "requests")
let tags = ["kitchen", "nook", "loft", "study", "hall", "attic", "garden", "studio"]
let start = Date().addingTimeInterval(-Double(roomCount) * 60)
let seedClock = ContinuousClock.now
var offset: Int64 = 0
for batchStart in stride(from: 0, to: roomCount, by: 2_000) {
    var events: [ProjectedEvent<CatalogProjection.Event>] = []
    for i in batchStart..<min(roomCount, batchStart + 2_000) {
        let room = "room-\(i)"
        let version = "version-\(i)"
        let owner = "user-\(i % 5_000)"
        let at = start.addingTimeInterval(Double(i) * 60)
        let visibility: RoomVisibility = i % 4 == 3 ? .private : .public
        let complete = RoomVersionCompleteRequest(
            roomId: room, versionId: version, title: "Room \(i) \(tags[i % tags.count])", tags: [tags[i % tags.count], tags[(i / 8) % tags.count]],
            visibility: visibility,
            source: RoomSource(usdzKey: "rooms/\(room)/\(version)/source.usdz", usdzBytes: 1_000,
                               roomplanJsonKey: "rooms/\(room)/\(version)/roomplan.json", roomplanJsonBytes: 100),
            redactions: [])
        let base = "rooms/\(room)/\(version)/"
        var ready = RoomTranscodeStatus(roomId: room, versionId: version, ownerUserId: owner, visibility: visibility, status: .ready,
                                        at: at.addingTimeInterval(30))
        ready.manifestKey = base + "layer_manifest.json"
        ready.thumbnailKey = base + "thumbnail.png"
        ready.glbKeys = [base + "layers/walls.glb", base + "layers/floors.glb"]
        ready.qualityGrade = ["A", "B", "B", "C", "A"][i % 5]
        for event in [CatalogProjection.Event.request(RoomTranscodeRequest(ownerUserId: owner, request: complete, requestedAt: at)),
                      .status(RoomTranscodeStatus(roomId: room, versionId: version, ownerUserId: owner, visibility: visibility,
                                                  status: .queued, at: at)),
                      .status(ready)] {
            events.append(ProjectedEvent(event: event, topic: "t", partition: 0, offset: offset))
            offset += 1
        }
    }
    let batch = events
    try await client.withTransaction { connection in try await projection.apply(batch, in: connection) }
}
let seeded = ContinuousClock.now - seedClock
_ = try await client.execute("ANALYZE")
say("catalog-bench: \(roomCount) rooms projected in \(seeded) (\(Int(Double(roomCount * 3) / seeded.timeInterval)) records/s)")

func server(_ catalog: RoomCatalog) throws -> HTTPServer {
    var router = catalog.router()
    router.merge(HealthRoutes.router(service: "catalog-bench", checks: [], metrics: MetricsRegistry()))
    let server = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, maxConnections: connections + 64),
                            router: router, logger: .disabled)
    try server.start()
    return server
}
let cachedServer = try server(cached)
let uncachedServer = try server(uncached)
let token = JWTCodec(secret: secret).issue(userID: "user-7", ttl: 3_600)

/// Runs wrk and returns its summary: requests/s and the latency percentiles.
func wrk(_ label: String, _ url: String, connections: Int = connections) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["wrk", connections == 1 ? "-t1" : "-t2", "-c\(connections)", "-d\(duration)s", "--latency", "-H", "Authorization: Bearer \(token)",
                         "-H", "apikey: \(token)", url]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    func field(_ prefix: String) -> String {
        output.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(prefix) }
            .map { $0.trimmingCharacters(in: .whitespaces).dropFirst(prefix.count).trimmingCharacters(in: .whitespaces) } ?? "?"
    }
    let transfer = field("Transfer/sec:")
    let errors = output.split(separator: "\n").filter { $0.contains("Socket errors") || $0.contains("Non-2xx") }
    say("\(label.padding(toLength: 34, withPad: " ", startingAt: 0)) req/s \(field("Requests/sec:"))  p50 \(field("50%"))  "
        + "p90 \(field("90%"))  p99 \(field("99%"))  \(transfer)/s  \(errors.joined(separator: "; "))")
}

let feed = "/rest/v1/rooms?visibility=eq.public&order=created_at.desc&limit=20"
let ranked = "/rest/v1/rooms?visibility=eq.public&order=feed_rank.desc&limit=20"
say("wrk -t2 -c\(connections) -d\(duration)s --latency (keep-alive), same server process, same run:")
// One connection first: the service time of a single request, without queueing.
try wrk("1 conn: /healthz", "http://127.0.0.1:\(cachedServer.port)/healthz", connections: 1)
try wrk("1 conn: feed", "http://127.0.0.1:\(cachedServer.port)\(feed)", connections: 1)
try wrk("1 conn: feed, cache off", "http://127.0.0.1:\(uncachedServer.port)\(feed)", connections: 1)
try wrk("baseline /healthz", "http://127.0.0.1:\(cachedServer.port)/healthz")
try wrk("feed created_at.desc limit 20", "http://127.0.0.1:\(cachedServer.port)\(feed)")
try wrk("feed feed_rank.desc limit 20", "http://127.0.0.1:\(cachedServer.port)\(ranked)")
// Last: requests of connections wrk has closed are still answered after it stops.
try wrk("feed, cache off", "http://127.0.0.1:\(uncachedServer.port)\(feed)")

await cachedServer.shutdown(gracePeriod: .zero)
await uncachedServer.shutdown(gracePeriod: .zero)
await client.close()
if ProcessInfo.processInfo.environment["CATALOG_BENCH_KEEP"] == "1" { say("kept database \(database.url)") } else { await database.drop() }
