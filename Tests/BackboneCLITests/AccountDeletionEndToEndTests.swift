import AnalyticsAggregator
import Auth
@testable import BackboneCLI
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import Hashing
import Ingest
import Kafka
import Lifecycle
import ObjectStore
import Postgres
import ProgressProjector
import Projection
import PrometheusMetrics
import RealtimeNotifier
import ServiceLogging
import ServiceRuntime
import Testing
import TranscodeWorker

/// Account deletion as a user lives it, against the whole system in this process (the five
/// services on one embedded Kafka cluster, one PostgreSQL database, one SeaweedFS bucket):
/// a user with reading history, analytics, two transcoded rooms, channel history, a profile, a
/// comment and a like on another user's room (and that user's on hers) asks for
/// deletion, cancels, asks again; after the (shortened) grace period every table and the
/// bucket hold nothing of them — checked by `psql` and `boto3` — while another user keeps
/// everything, a rebuild brings nothing back, their token is refused, and the receipt lists
/// every service.
@Suite("Account deletion end to end", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(5)))
struct AccountDeletionEndToEndTests {
    static let secret = "account-deletion-secret-0123456789"
    static let doomed = "erase-me-7f3a"
    static let keeper = "keeps-data-2b"
    static let material = "lesson-deletion-1"

    static func events(user: String, session: String, count: Int, from start: Date) -> [ReadingEventUploadItem] {
        var items: [ReadingEventUploadItem] = []
        for i in 0..<count {
            let type: ReadingEventType = i == 0 ? .opened : .positionChanged
            let delta = i == 0 ? 0 : 30
            let at = start.addingTimeInterval(Double(i) * 30)
            let position = ReadingPosition.page(i + 1, of: 20)
            items.append(ReadingEventUploadItem(
                eventId: UUID().uuidString.lowercased(), clientSessionId: session, readingTargetType: .knowledgeSource,
                materialId: material, eventType: type, position: position, activeSecondsDelta: delta,
                clientTimestamp: at, clientTimezoneOffsetMinutes: 480, sequence: i, platform: "ios", appVersion: "1.0"))
        }
        return items
    }

    /// The public tables whose rows mention `needle` anywhere (as `psql`, an independent client, sees them).
    static func tablesMentioning(_ needle: String, databaseURL: String) throws -> [String] {
        let sql = """
            SELECT table_name FROM information_schema.tables
            WHERE table_schema = 'public' AND table_type = 'BASE TABLE'
              AND (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM %I x WHERE to_jsonb(x)::text LIKE %L',
                                                               table_name, '%\(needle)%'), false, true, '')))[1]::text::int > 0
            ORDER BY 1
            """
        let (status, output) = try Integration.run("/usr/bin/env", ["psql", databaseURL, "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
        #expect(status == 0, "psql: \(output)")
        return output.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
    }

    /// The keys under `prefix`, as boto3 (from .venv) lists them.
    static func boto3Keys(_ configuration: S3Configuration, prefix: String) async throws -> [String] {
        try await Boto3Witness.keys(configuration, prefix: prefix)
    }

    @Test("request, cancel, request again: after the grace period nothing of the user is left anywhere, another user keeps everything, a rebuild brings nothing back, the token is refused, and the receipt lists every service")
    func deletionEndToEnd() async throws {
        try await SeaweedFSFixture.with { s3 in
            let store = S3ObjectStore(configuration: s3)
            try await InProcessBackbone.with(databasePrefix: "deletion", secret: Self.secret,
                                             services: ServiceCatalog.entries.map(\.name)) { backbone in
                let client = try backbone.context("ingest").database
                _ = try await PostgresMigrator(migrations: ServiceCatalog.allMigrations, logger: .disabled).migrate(client)

                var ingestSettings = IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000)
                ingestSettings.accountDeletionGracePeriod = .seconds(2)
                ingestSettings.accountDeletionSchedulerInterval = .milliseconds(200)
                let ingest = IngestService(context: try backbone.context("ingest"), configuration: ingestSettings, objects: store).parts()
                let progress = ProgressProjectorService(context: try backbone.context("progress-projector")).parts()
                let analytics = AnalyticsService(context: try backbone.context("analytics-aggregator"),
                                                 configuration: AnalyticsConfiguration()).parts()
                var workerSettings = TranscodeConfiguration()
                workerSettings.pollInterval = .milliseconds(100)
                workerSettings.outboxInterval = .milliseconds(200)
                var workerService = TranscodeWorkerService(
                    context: try backbone.context("transcode-worker"), configuration: workerSettings,
                    pipeline: StoreTranscodePipeline(store: store, converter: RoomScanConverter(), workDirectory: NSTemporaryDirectory(),
                                                     maxJobBytes: 64 << 20),
                    links: StoreOutputLinks(store: store, ttl: .seconds(300)), workerID: "deletion")
                workerService.objects = store
                let worker = workerService.parts()
                let realtime = RealtimeNotifierService(
                    context: try backbone.context("realtime-notifier"),
                    configuration: RealtimeConfiguration(maxBatchWait: .milliseconds(5), maintenanceInterval: .seconds(1),
                                                         instanceID: "deletion")).parts()
                for parts in [ingest, progress, analytics, worker, realtime] { backbone.start(parts) }

                let codec = JWTCodec(secret: Self.secret)
                let service = codec.issue(userID: "catalog", ttl: 3600, role: "service")
                func call(_ router: Router, _ method: HTTPMethod, _ path: String, user: String?, token: String? = nil,
                          _ body: [UInt8] = []) async -> HTTPResponse {
                    let bearer = token ?? user.map { codec.issue(userID: $0, ttl: 3600) } ?? ""
                    return await router.respond(to: HTTPRequest(method: method, path: path, headers: [
                        "Authorization": "Bearer \(bearer)", "Content-Type": "application/json"], body: body))
                }
                func text(_ response: HTTPResponse) -> String { String(decoding: response.body, as: UTF8.self) }
                func batch(_ user: String, _ events: [ReadingEventUploadItem]) async throws -> HTTPResponse {
                    await call(ingest.router, .post, "/learning/reading-events/batch", user: user,
                               try ContractCoding.encode(ReadingEventBatchRequest(events: events)))
                }

                // Both users read, and each has rooms transcoded into the store.
                let lesson = MaterialUpsertRequest(readingTargetType: .knowledgeSource)
                #expect(await call(ingest.router, .put, "/materials/\(Self.material)", user: nil, token: service,
                                   try ContractCoding.encode(lesson)).status.rawValue < 300)
                let start = Date().addingTimeInterval(-3600)
                for user in [Self.doomed, Self.keeper] {
                    let answer = try await batch(user, Self.events(user: user, session: "s-\(user)", count: 6, from: start))
                    #expect(answer.status == .ok && !text(answer).contains("\"status\":\"rejected\""), "\(text(answer))")
                }
                let fixtures = Integration.packageRoot.appendingPathComponent("Tests/USDTests/Fixtures")
                let usdzPath = fixtures.appendingPathComponent("roomscan.usdz").path
                let jsonPath = fixtures.appendingPathComponent("roomscan.roomplan.json").path
                let usdz = try [UInt8](Data(contentsOf: URL(fileURLWithPath: usdzPath)))
                let json = try [UInt8](Data(contentsOf: URL(fileURLWithPath: jsonPath)))
                func uploadRoom(_ user: String, title: String) async throws -> (room: String, version: String) {
                    let created = await call(ingest.router, .post, "/rooms/uploads", user: user, try ContractCoding.encode(
                        RoomUploadInitRequest(title: title, tags: ["room"], visibility: .public, usdzBytes: Int64(usdz.count),
                                              roomplanJsonBytes: Int64(json.count))))
                    #expect(created.status == .created, "\(text(created))")
                    let answer = try ContractCoding.decode(RoomUploadInitResponse.self, from: created.body)
                    #expect(try await PlainHTTP.send("PUT", try #require(answer.usdz.url), headers: answer.usdz.headers,
                                                     file: usdzPath).status == 200)
                    #expect(try await PlainHTTP.send("PUT", try #require(answer.roomplanJson.url),
                                                     headers: answer.roomplanJson.headers, file: jsonPath).status == 200)
                    let complete = RoomVersionCompleteRequest(
                        roomId: answer.roomId, versionId: answer.versionId, title: title, tags: ["room"], visibility: .public,
                        source: RoomSource(usdzKey: answer.usdz.key, usdzBytes: answer.usdz.bytes,
                                           roomplanJsonKey: answer.roomplanJson.key, roomplanJsonBytes: answer.roomplanJson.bytes,
                                           sha256: Digest.hex(Digest.sha256(usdz))),
                        redactions: [])
                    let accepted = await call(ingest.router, .post, "/rooms/versions", user: user, try ContractCoding.encode(complete))
                    #expect(accepted.status == .accepted, "\(text(accepted))")
                    return (answer.roomId, answer.versionId)
                }
                let doomedRooms = [try await uploadRoom(Self.doomed, title: "客厅"), try await uploadRoom(Self.doomed, title: "书房")]
                let keeperRoom = try await uploadRoom(Self.keeper, title: "厨房")
                func count(_ sql: String, _ binds: [any PostgresBindable]) async throws -> Int64 {
                    try await client.query(sql, binds).first?.decode(Int64.self, 0) ?? -1
                }
                let ready = try await Integration.eventually(timeout: .seconds(120), every: .milliseconds(250)) {
                    let versions = try await count("SELECT count(*) FROM catalog_versions WHERE status = 'ready'", [])
                    let progressRows = try await count("SELECT count(*) FROM reading_progress", [])
                    let sessions = try await count("SELECT count(*) FROM analytics_sessions", [])
                    let history = try await count("SELECT count(*) FROM realtime_history WHERE channel = $1", ["user:\(Self.doomed)"])
                    return versions == 3 && progressRows == 2 && sessions == 2 && history > 0
                }
                #expect(ready, "rooms transcoded, progress, analytics and channel history projected")
                for room in doomedRooms.map(\.room) + [keeperRoom.room] {
                    #expect(try await Self.boto3Keys(s3, prefix: "rooms/\(room)/").contains { $0.hasSuffix("layer_manifest.json") })
                }

                // The social layer: each names herself, comments on and likes the other's room; the keeper
                // also comments on her own. The write edge learns the rooms are published from the statuses.
                func social(_ user: String, _ path: String, _ body: String) async -> HTTPResponse {
                    await call(ingest.router, .post, path, user: user, Array(body.utf8))
                }
                for (user, room) in [(Self.doomed, keeperRoom.room), (Self.keeper, doomedRooms[0].room)] {
                    #expect(await social(user, "/rest/v1/profiles", #"{"display_name":"name of \#(user)"}"#).status == .created)
                    let commented = await Integration.eventually(timeout: .seconds(10), every: .milliseconds(100)) {
                        await social(user, "/rest/v1/comments", #"{"room_id":"\#(room)","body":"hello from \#(user)"}"#).status == .created
                    }
                    #expect(commented, "\(user) comments on \(room)")
                    #expect(await social(user, "/rest/v1/likes", #"{"room_id":"\#(room)"}"#).status == .created)
                }
                #expect(await social(Self.keeper, "/rest/v1/comments", #"{"room_id":"\#(keeperRoom.room)","body":"mine"}"#).status == .created)
                let socialProjected = try await Integration.eventually(timeout: .seconds(20), every: .milliseconds(100)) {
                    let counts = try await count("""
                        SELECT count(*) FROM catalog_room_social WHERE room_id = $1 AND like_count = 1 AND comment_count = 2
                        """, [keeperRoom.room])
                    let pushes = try await count("SELECT count(*) FROM realtime_history WHERE channel = $1 AND event = 'comment_new'",
                                                 ["user:\(Self.keeper)"])
                    let notes = try await count("SELECT count(*) FROM catalog_notifications WHERE user_id = $1 AND actor_id = $2",
                                                [Self.keeper, Self.doomed])
                    return counts == 1 && pushes == 1 && notes == 2
                }
                #expect(socialProjected, "comments, likes, counts, notifications and pushes projected")

                // Request → uploads refused, reads still served; cancel → uploads accepted again.
                let requested = await call(ingest.router, .post, "/account/deletion", user: Self.doomed)
                #expect(requested.status == .accepted, "\(text(requested))")
                let first = try ContractCoding.decode(AccountDeletionResponse.self, from: requested.body)
                #expect(first.status == .scheduled && first.purgeAt != nil)
                let refused = try await batch(Self.doomed, Self.events(user: Self.doomed, session: "s-late", count: 2, from: start))
                #expect(refused.status == .forbidden && text(refused).contains("ACCOUNT_DELETION_PENDING"), "\(text(refused))")
                #expect(await call(progress.router, .get, "/materials/\(Self.material)/reading-progress", user: Self.doomed).status == .ok)
                let cancelled = await call(ingest.router, .delete, "/account/deletion", user: Self.doomed)
                #expect(cancelled.status == .ok && text(cancelled).contains("cancelled"), "\(text(cancelled))")
                let again = try await batch(Self.doomed, Self.events(user: Self.doomed, session: "s-again", count: 3, from: start))
                #expect(again.status == .ok && !text(again).contains("\"status\":\"rejected\""), "\(text(again))")

                // Request again; the purge runs once the two seconds passed.
                let second = try ContractCoding.decode(AccountDeletionResponse.self,
                                                       from: await call(ingest.router, .post, "/account/deletion", user: Self.doomed).body)
                #expect(second.requestId != first.requestId && second.status == .scheduled)
                let doomedToken = codec.issue(userID: Self.doomed, ttl: 3600)
                var receipt: AccountDeletionResponse?
                let completed = await Integration.eventually(timeout: .seconds(90), every: .milliseconds(250)) {
                    let answer = await call(ingest.router, .get, "/account/deletion", user: nil, token: doomedToken)
                    receipt = try? ContractCoding.decode(AccountDeletionResponse.self, from: answer.body)
                    return receipt?.status == .completed
                }
                #expect(completed, "receipt: \(String(describing: receipt))")
                #expect(receipt?.requestId == second.requestId)
                #expect(receipt?.userIdHash == Digest.hex(Digest.sha256(Array(Self.doomed.utf8))))
                #expect(Set(receipt?.services?.map(\.service) ?? []) == Set(IngestConfiguration.defaultDeletionServices))
                #expect(receipt?.services?.allSatisfy { $0.state == .erased && $0.erasedAt != nil } == true)

                // Nothing of them in any table (psql) or the bucket (boto3); the other user keeps everything.
                for needle in [Self.doomed] + doomedRooms.flatMap({ [$0.room, $0.version] }) {
                    #expect(try Self.tablesMentioning(needle, databaseURL: backbone.database.url) == [], "\(needle) is still stored")
                }
                for room in doomedRooms.map(\.room) {
                    #expect(try await Self.boto3Keys(s3, prefix: "rooms/\(room)/") == [], "objects of \(room) are left")
                }
                #expect(try await Self.boto3Keys(s3, prefix: "rooms/\(keeperRoom.room)/").count >= 4)
                let kept = try Self.tablesMentioning(Self.keeper, databaseURL: backbone.database.url)
                for table in ["reading_progress", "progress_event_log", "analytics_events", "analytics_sessions", "analytics_daily",
                              "analytics_months",
                              "rooms", "room_versions", "transcode_jobs", "catalog_rooms", "realtime_history", "realtime_rooms",
                              "ingest_accepted_events"] {
                    #expect(kept.contains(table), "\(table) lost the other user's rows")
                }

                for table in ["social_comments", "social_profiles", "catalog_comments", "catalog_profiles", "catalog_notifications"] {
                    #expect(kept.contains(table), "\(table) lost the other user's rows")
                }
                // The keeper's room counts what is left: her own comment, no like.
                #expect(try await count("SELECT count(*) FROM catalog_room_social WHERE room_id = $1 AND like_count = 0 AND comment_count = 1",
                                        [keeperRoom.room]) == 1)

                // Their token is refused by every service that takes user tokens; the other user's is not.
                let keeperToken = codec.issue(userID: Self.keeper, ttl: 3600)
                let refusedEverywhere = try await Integration.eventually(timeout: .seconds(10)) {
                    var statuses: [Int] = []
                    for token in [doomedToken] {
                        statuses.append(await call(progress.router, .get, "/materials/\(Self.material)/reading-progress",
                                                   user: nil, token: token).status.rawValue)
                        statuses.append(await call(analytics.router, .get, "/learning/summary", user: nil, token: token).status.rawValue)
                        statuses.append(await call(worker.router, .get, "/rooms/versions/\(doomedRooms[0].version)", user: nil,
                                                   token: token).status.rawValue)
                        statuses.append(await call(realtime.router, .get, "/realtime/v1/channels/user:\(Self.doomed)/events",
                                                   user: nil, token: token).status.rawValue)
                        statuses.append(try await batch(Self.doomed, []).status.rawValue)
                    }
                    return statuses.allSatisfy { $0 == 401 }
                }
                #expect(refusedEverywhere)
                #expect(await call(progress.router, .get, "/materials/\(Self.material)/reading-progress", user: nil,
                                   token: keeperToken).status == .ok)

                // A rebuild re-projects the whole topic, which still holds their events: nothing comes back.
                let environment = ["KAFKA_BROKERS": backbone.cluster.bootstrapServers, "DATABASE_URL": backbone.database.url, "JWT_SECRET": Self.secret]
                for target in ["progress", "analytics"] {
                    let run = try await CLIProcess.run(["rebuild", target], environment: environment)
                    #expect(run.status == 0, "\(target): \(run.stderr)")
                }
                #expect(try Self.tablesMentioning(Self.doomed, databaseURL: backbone.database.url) == [])
                #expect(try await count("SELECT count(*) FROM reading_progress WHERE user_id = $1", [Self.keeper]) == 1)
                #expect(try await count("SELECT count(*) FROM analytics_sessions WHERE user_id = $1", [Self.keeper]) == 1)
            }
        }
    }
}
