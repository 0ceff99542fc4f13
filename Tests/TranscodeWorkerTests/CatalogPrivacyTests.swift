import Auth
import BackboneTestSupport
import Contracts
import Foundation
import HTTPRouting
import HTTPServer
import Kafka
import Postgres
import ServiceLogging
import ServiceRuntime
import Testing
@testable import TranscodeWorker

/// What the catalog tells about a room beyond its files: the city label everyone sees on a
/// public room, the redactions only its owner sees, a version's status while it is still
/// uploading, and the app's retry function (also through Supabase's own client).
@Suite("room catalog: city labels, the owner's redactions, uploading catch-up, transcode-retry", .serialized,
       .enabled(if: Integration.isEnabled), .timeLimit(.minutes(3)))
struct CatalogPrivacyTests {
    typealias Harness = JobLifecycleTests.Harness

    static func upload(_ harness: Harness, room: String, version: String, owner: String = "alice", city: String?,
                       at: Date) throws -> KafkaProducerRecord {
        let event = RoomUploadEvent(roomId: room, versionId: version, ownerUserId: owner, status: .uploading, title: "draft",
                                    tags: ["attic"], visibility: .public, locationCity: city, at: at)
        return KafkaProducerRecord(topic: harness.uploads, key: Array(room.utf8), value: try ContractCoding.encode(event))
    }

    static func send(_ harness: Harness, _ records: [KafkaProducerRecord]) async throws {
        for result in await harness.producer.send(records) { _ = try result.get() }
    }

    static func rows(_ response: HTTPResponse) -> [[String: Any]] { RoomCatalogTests.json(response) as? [[String: Any]] ?? [] }

    /// Runs a Python witness from `Clients/` against `router` served over real HTTP; returns the
    /// JSON object it printed last.
    static func witness(_ script: String, router: Router, spec: [String: Any]) async throws -> [String: Any] {
        let server = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0), router: router, logger: .disabled)
        try server.start()
        let specText = String(decoding: try JSONSerialization.data(withJSONObject: spec), as: UTF8.self)
        let path = RoomCatalogTests.clients.appendingPathComponent(script).path
        let python = ProcessInfo.processInfo.environment["PYTHON"] ?? "python3"
        let base = "http://127.0.0.1:\(server.port)"
        let run = await Task.detached { Result { try Integration.run(python, [path, base, specText]) } }.value
        await server.shutdown(gracePeriod: .zero)
        let (status, output) = try run.get()
        #expect(status == 0, "\(script): \(output.suffix(3000))")
        let last = output.split(separator: "\n").last.map(String.init) ?? ""
        return try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any] ?? [:]
    }

    @Test("a room shows the city of its newest request, else of its upload-init, to everyone; absurd labels and coordinates are dropped")
    func locationCity() async throws {
        let harness = try await Harness()
        let t0 = Date().addingTimeInterval(-120)
        func request(_ title: String, city: String?, at seconds: Double) -> RoomTranscodeRequest {
            var request = RoomCatalogTests.request(harness, owner: "alice", title: title, tags: [], visibility: .public,
                                                   at: t0.addingTimeInterval(seconds))
            request.locationCity = city
            return request
        }
        // An upload-init and a request on two topics, applied in whichever order: the request's city wins…
        let hangzhou = request("Hangzhou flat", city: "杭州", at: 10)
        // …even when it gives none.
        let cleared = request("No city", city: nil, at: 11)
        // Only the upload-init so far: its city stands in.
        let (draftRoom, draftVersion) = ("room-draft", "v-draft")
        let long = request("Long label", city: String(repeating: "城", count: 101), at: 12)
        let coordinates = request("GPS", city: "31.2304, 121.4737", at: 13)
        let trimmed = request("Trimmed", city: "  Shanghai \n", at: 14)
        try await harness.produce([hangzhou])
        try await Self.send(harness, [
            try Self.upload(harness, room: hangzhou.roomId, version: hangzhou.versionId, city: "Paris", at: t0),
            try Self.upload(harness, room: cleared.roomId, version: cleared.versionId, city: "Lyon", at: t0),
            try Self.upload(harness, room: draftRoom, version: draftVersion, city: "成都", at: t0),
        ])
        try await harness.produce([cleared, long, coordinates, trimmed])

        try await JobLifecycleTests.running(harness.service(CatalogPipeline()), only: ["room-catalog"]) { router in
            func cities(_ user: String, _ query: [String: String] = [:]) async -> [String: String] {
                let answer = await RoomCatalogTests.get(router, "/rest/v1/rooms", query: [
                    "owner_id": "eq.alice", "select": "id,location_city"].merging(query) { $1 }, user: user)
                return Dictionary(uniqueKeysWithValues: Self.rows(answer).map {
                    ($0["id"] as? String ?? "", $0["location_city"] as? String ?? "<null>")
                })
            }
            let expected = [hangzhou.roomId: "杭州", cleared.roomId: "<null>", draftRoom: "成都", long.roomId: "<null>",
                            coordinates.roomId: "<null>", trimmed.roomId: "Shanghai"]
            let settled = await Integration.eventually(timeout: .seconds(30)) { await cities("alice") == expected }
            let seen = await cities("alice")
            #expect(settled, "\(seen)")
            // The column is in `select=*` and filterable; others see the label on a public room once published.
            let all = await RoomCatalogTests.get(router, "/rest/v1/rooms", query: ["id": "eq.\(hangzhou.roomId)"], user: "alice")
            #expect(Self.rows(all).first?["location_city"] as? String == "杭州")
            #expect(await cities("alice", ["location_city": "eq.杭州"]).keys.sorted() == [hangzhou.roomId])
            #expect(await cities("bob").isEmpty, "nothing is published yet, so nobody else sees these rooms")
        }
        await harness.close()
    }

    @Test("once a public room is published a stranger sees its city (also filtering on it); a private room's city only its owner")
    func locationCityOfAPublishedRoom() async throws {
        let harness = try await Harness()
        var published = harness.request(title: "Loft", owner: "alice", visibility: .public)
        published.locationCity = "上海"
        var hidden = harness.request(title: "Study", owner: "alice", visibility: .private)
        hidden.locationCity = "成都"
        try await harness.produce([published, hidden])
        try await JobLifecycleTests.running(harness.service(CatalogPipeline())) { router in
            func rooms(_ user: String, _ query: [String: String] = [:]) async -> [[String: Any]] {
                Self.rows(await RoomCatalogTests.get(router, "/rest/v1/rooms", query: [
                    "owner_id": "eq.alice", "select": "id,location_city,current_version_id"].merging(query) { $1 }, user: user))
            }
            let ready = await Integration.eventually(timeout: .seconds(30)) {
                let shown = await rooms("bob").first?["current_version_id"] as? String == published.versionId
                let done = (try? await harness.jobStatus(hidden.versionId)) == "ready"
                return shown && done
            }
            #expect(ready, "the public room is published to others")
            let stranger = await rooms("bob")
            #expect(stranger.count == 1, "\(stranger)")
            #expect(stranger.first?["id"] as? String == published.roomId && stranger.first?["location_city"] as? String == "上海",
                    "\(stranger)")
            #expect(await rooms("bob", ["location_city": "eq.上海"]).count == 1)
            #expect(await rooms("bob", ["location_city": "eq.成都"]).isEmpty)
            let owner = Dictionary(uniqueKeysWithValues: await rooms("alice").map {
                ($0["id"] as? String ?? "", $0["location_city"] as? String ?? "<null>")
            })
            #expect(owner == [published.roomId: "上海", hidden.roomId: "成都"])
        }
        await harness.close()
    }

    @Test("the owner reads a version's redactions at /rest/v1/redactions (Supabase's postgrest client too); anyone else gets []")
    func redactionsForTheOwnerOnly() async throws {
        let harness = try await Harness()
        var request = harness.request(title: "Kitchen", owner: "alice", visibility: .public)
        request.redactions = [
            Redaction(textureRef: "textures/wall.png", kind: .face, region: RedactionRegion(x: 0.1, y: 0.2, width: 0.3, height: 0.25),
                      method: "gaussian_blur_r18"),
            Redaction(textureRef: "textures/wall.png", kind: .manual, region: RedactionRegion(x: 0.5, y: 0.5, width: 0.5, height: 0.5),
                      method: "manual_blur"),
        ]
        let other = harness.request(title: "Other", owner: "alice", visibility: .public)
        try await harness.produce([request, other])
        try await JobLifecycleTests.running(harness.service(CatalogPipeline())) { router in
            func redactions(_ user: String, _ query: [String: String] = [:]) async -> [[String: Any]] {
                Self.rows(await RoomCatalogTests.get(router, "/rest/v1/redactions",
                                                     query: ["version_id": "eq.\(request.versionId)"].merging(query) { $1 }, user: user))
            }
            let published = await Integration.eventually(timeout: .seconds(30)) {
                let rooms = await RoomCatalogTests.get(router, "/rest/v1/rooms", query: ["id": "eq.\(request.roomId)"], user: "bob")
                return Self.rows(rooms).first?["current_version_id"] as? String == request.versionId
            }
            #expect(published, "the room is public and published: bob sees it")
            let rows = await redactions("alice")
            #expect(rows.count == 2)
            let first = try #require(rows.first)
            #expect(Set(first.keys) == ["id", "version_id", "texture_ref", "kind", "region", "method", "created_at"])
            #expect(first["version_id"] as? String == request.versionId && first["texture_ref"] as? String == "textures/wall.png")
            #expect(first["kind"] as? String == "face" && first["method"] as? String == "gaussian_blur_r18")
            let region = first["region"] as? [String: Double]
            #expect(region == ["x": 0.1, "y": 0.2, "width": 0.3, "height": 0.25])
            #expect(UUID(uuidString: first["id"] as? String ?? "") != nil, "ids are UUIDs")
            #expect(rows.map { $0["kind"] as? String } == ["face", "manual"], "in the order the app sent them")
            // Stable ids (a rebuild makes the same), filterable.
            #expect(await redactions("alice").compactMap { $0["id"] as? String } == rows.compactMap { $0["id"] as? String })
            let byID = await redactions("alice", ["id": "eq.\(first["id"] as? String ?? "")", "select": "id,kind"])
            #expect(byID.count == 1 && byID.first?.count == 2)
            // The public room's viewer, and a version without redactions.
            #expect(await redactions("bob").isEmpty)
            #expect(Self.rows(await RoomCatalogTests.get(router, "/rest/v1/redactions", query: [:], user: "bob")).isEmpty)
            #expect(Self.rows(await RoomCatalogTests.get(router, "/rest/v1/redactions", query: ["version_id": "eq.\(other.versionId)"],
                                                         user: "alice")).isEmpty)
            let bad = await RoomCatalogTests.get(router, "/rest/v1/redactions", query: ["region": "eq.x"], user: "alice")
            #expect(bad.status == .badRequest && String(decoding: bad.body, as: UTF8.self).contains("UNSUPPORTED_COLUMN"))

            let codec = JWTCodec(secret: JobLifecycleTests.secret)
            let result = try await Self.witness("redactions_client.py", router: router, spec: [
                "owner": codec.issue(userID: "alice", ttl: 600), "stranger": codec.issue(userID: "bob", ttl: 600),
                "version": request.versionId])
            #expect((result["owner"] as? [[String: Any]])?.count == 2, "\(result)")
            #expect((result["stranger"] as? [Any])?.isEmpty == true, "\(result)")
            #expect((result["owner_columns"] as? [[String: Any]])?.first?.keys.sorted() == ["id", "kind", "region"], "\(result)")
        }
        await harness.close()
    }

    @Test("between upload-init and upload-complete both catch-up queries answer uploading to the owner; then queued")
    func uploadingCatchUp() async throws {
        let harness = try await Harness()
        let request = harness.request(title: "Attic", owner: "alice", visibility: .public)
        try await Self.send(harness, [try Self.upload(harness, room: request.roomId, version: request.versionId, owner: "alice",
                                                      city: nil, at: Date())])
        // The catalog alone: the worker's intake has not taken the request in (there is none yet).
        try await JobLifecycleTests.running(harness.service(CatalogPipeline()), only: ["room-catalog"]) { router in
            func rest(_ user: String) async -> String? {
                let answer = await RoomCatalogTests.get(router, "/rest/v1/room_versions", query: ["id": "eq.\(request.versionId)"], user: user)
                return Self.rows(answer).first?["status"] as? String
            }
            func details(_ user: String) async -> (HTTPStatus, RoomVersionDetails?) {
                let answer = await JobLifecycleTests.call(router, .get, "/rooms/versions/\(request.versionId)", user: user)
                return (answer.status, try? ContractCoding.decode(RoomVersionDetails.self, from: answer.body))
            }
            #expect(await Integration.eventually(timeout: .seconds(30)) { await rest("alice") == "uploading" })
            let (status, body) = await details("alice")
            #expect(status == .ok && body?.status == .uploading && body?.roomId == request.roomId && body?.outputs == nil)
            // Nobody else learns of it.
            #expect(await rest("bob") == nil)
            #expect(await details("bob").0 == .notFound)

            // upload-complete: the request is in the catalog (the intake may not have it yet).
            try await harness.produce([request])
            #expect(await Integration.eventually(timeout: .seconds(30)) { await rest("alice") == "queued" })
            #expect(await details("alice").1?.status == .queued)
        }
        await harness.close()
    }

    @Test("POST /functions/v1/transcode-retry {version_id}: the same retry with snake_case in and out, and the same error codes")
    func retryFunction() async throws {
        let harness = try await Harness()
        let request = harness.request(title: "bad", owner: "owner-1")
        try await JobLifecycleTests.running(harness.service(ScriptedPipeline())) { router in
            try await harness.produce([request])
            #expect(try await Integration.eventually { try await harness.jobStatus(request.versionId) == "failed" })
            func call(_ body: String, user: String?) async -> (HTTPStatus, [String: Any]) {
                var headers: HTTPHeaders = ["Content-Type": "application/json"]
                if let user { headers.add(name: "Authorization", value: "Bearer \(JWTCodec(secret: JobLifecycleTests.secret).issue(userID: user))") }
                let answer = await router.respond(to: HTTPRequest(method: .post, path: "/functions/v1/transcode-retry", headers: headers,
                                                                  body: Array(body.utf8)))
                return (answer.status, RoomCatalogTests.json(answer) as? [String: Any] ?? [:])
            }
            func code(_ answer: (HTTPStatus, [String: Any])) -> String? { (answer.1["error"] as? [String: Any])?["code"] as? String }
            let body = #"{"version_id":"\#(request.versionId)"}"#
            #expect(await call(body, user: nil).0 == .unauthorized)
            #expect(code(await call(body, user: "intruder")) == "NOT_FOUND")
            #expect(code(await call("{not json", user: "owner-1")) == "INVALID_JSON")
            #expect(code(await call(#"{"versionId":"\#(request.versionId)"}"#, user: "owner-1")) == "INVALID_FIELD")
            #expect(code(await call(#"{"version_id":""}"#, user: "owner-1")) == "INVALID_FIELD")
            let accepted = await call(body, user: "owner-1")
            #expect(accepted.0 == .accepted)
            #expect(accepted.1 as NSDictionary == ["version_id": request.versionId, "status": "queued", "attempt": 2] as NSDictionary)
            #expect(try await Integration.eventually { try await harness.jobStatus(request.versionId) == "failed" })
            #expect(await call(body, user: "owner-1").0 == .accepted)
            #expect(try await Integration.eventually { try await harness.jobStatus(request.versionId) == "failed" })
            let refused = await call(body, user: "owner-1")
            #expect(refused.0 == .conflict && code(refused) == "RETRY_LIMIT_REACHED")
        }
        await harness.close()
    }

    @Test("transcode-retry through Supabase's own client (supabase_functions) with an ES256 Supabase Auth session PyJWT minted, whose JWKS the worker reads: the owner's failed version is 202 queued with the next attempt; a stranger gets 404 NOT_FOUND, a version that has not failed 409 VERSION_NOT_FAILED")
    func retryFunctionThroughSupabaseClient() async throws {
        let witness = try TokenWitness.shared()
        let tokens = TokenVerificationSettings(keySet: .file(try witness.keySetFile()), issuer: TokenWitness.issuer,
                                               audience: TokenWitness.audience)
        // The session's user owns both versions; the stranger holds another session (RS256, another sub).
        let owner = try witness.subject("es256")
        let harness = try await Harness()
        let failed = harness.request(title: "bad", owner: owner)
        let ready = harness.request(title: "fine", owner: owner)
        try await JobLifecycleTests.running(harness.service(ScriptedPipeline(), tokens: tokens)) { router in
            try await harness.produce([failed, ready])
            #expect(try await Integration.eventually { try await harness.jobStatus(failed.versionId) == "failed" })
            #expect(try await Integration.eventually { try await harness.jobStatus(ready.versionId) == "ready" })
            let result = try await Self.witness("retry_client.py", router: router, spec: [
                "owner": try witness.token("es256"), "stranger": try witness.token("rs256"),
                "failed": failed.versionId, "ready": ready.versionId])
            #expect(result["owner"] as? NSDictionary == ["version_id": failed.versionId, "status": "queued", "attempt": 2] as NSDictionary,
                    "\(result)")
            func refusal(_ name: String) -> String {
                let answer = result[name] as? [String: Any]
                return "\(answer?["status"] as? Int ?? 0) \((answer?["error"] as? [String: Any])?["code"] as? String ?? "-")"
            }
            #expect(refusal("stranger") == "404 NOT_FOUND", "\(result)")
            #expect(refusal("not_failed") == "409 VERSION_NOT_FAILED", "\(result)")
            // Only the owner's call queued the version again.
            #expect(try await harness.client.query("SELECT attempts FROM transcode_jobs WHERE version_id = $1", [ready.versionId])
                .first?.decode(Int32.self, "attempts") == 1)
        }
        await harness.close()
    }
}
