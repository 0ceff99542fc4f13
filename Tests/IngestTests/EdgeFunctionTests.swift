import Auth
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import Ingest
import JSON
import ObjectStore
import ServiceRuntime
import Testing

/// The CrowdRoom app's own calls (`/functions/v1/*`, seed `002_*` §2.1, §5), with the seed's
/// snake_case fields, against a real SeaweedFS, PostgreSQL and the embedded Kafka broker; and
/// Supabase's own Python client (`supabase_functions`) calling them over HTTP as the app does.
@Suite("Edge Functions: the app's quota, upload-init, upload-complete and account-delete, as the seed calls them", .serialized,
       .enabled(if: Integration.isEnabled), .timeLimit(.minutes(5)))
struct EdgeFunctionTests {
    typealias Uploads = RoomUploadIntegrationTests
    static let clients = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Clients")

    static func call(_ harness: IngestHarness, _ name: String, method: HTTPMethod = .post, token: String?,
                     _ body: [String: Any] = [:]) async throws -> HTTPResponse {
        let bytes = method == .get ? [] : Array(try JSONSerialization.data(withJSONObject: body))
        return await harness.request(method, "/functions/v1/\(name)", token: token, body: bytes)
    }

    static func object(_ response: HTTPResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    static var initBody: [String: Any] { ["title": "客厅", "tags": ["living room"], "visibility": "public",
                                          "bytes_source": 2000, "bytes_json": 300, "location_city": "上海"] }

    @Test("quota (exactly tier, storage{used,limit}, resets_at) → upload-init → PUT both → upload-complete with only version_id and redactions → 202 queued, one transcode request with the title, tags, sizes and city from upload-init")
    func flowA() async throws {
        try await Uploads.withStack { harness, store in
            let token = harness.userToken("app-owner")
            let quota = Self.object(try await Self.call(harness, "quota", method: .get, token: token))
            // The seed's shape exactly: nothing more, nothing camelCase.
            #expect(Set(quota.keys) == ["tier", "storage", "resets_at"])
            #expect(Set((quota["storage"] as? [String: Any])?.keys.map { $0 } ?? []) == ["used", "limit"])
            #expect(quota["tier"] as? String == "free")
            #expect((quota["storage"] as? [String: Any])?["used"] as? Int == 0)
            #expect((quota["storage"] as? [String: Any])?["limit"] as? Int == 1 << 30)
            #expect((quota["resets_at"] as? String)?.hasSuffix("-01T00:00:00.000Z") == true)

            let created = try await Self.call(harness, "upload-init", token: token, Self.initBody)
            #expect(created.status == .created)
            let answer = Self.object(created)
            #expect(Set(answer.keys) == ["room_id", "version_id", "status", "presigned_usdz", "presigned_json", "expires_at"])
            #expect(answer["status"] as? String == "uploading")
            let version = try #require(answer["version_id"] as? String)
            let room = try #require(answer["room_id"] as? String)

            let early = try await Self.call(harness, "upload-complete", token: token, ["version_id": version, "redactions": []])
            #expect(early.status == .conflict && early.errorCode == "UPLOAD_INCOMPLETE")

            let usdz = Uploads.file(2000), json = Uploads.file(300, fill: 0x7B)
            defer { for path in [usdz, json] { try? FileManager.default.removeItem(atPath: path) } }
            // The app PUTs with nothing but the URL (URLSession sets Content-Length from the file).
            #expect(try await PlainHTTP.send("PUT", try #require(answer["presigned_usdz"] as? String), file: usdz).status == 200)
            #expect(try await PlainHTTP.send("PUT", try #require(answer["presigned_json"] as? String), file: json).status == 200)

            let redaction: [String: Any] = ["texture_ref": "Textures/wall_0.png", "kind": "face",
                                            "region": ["x": 0.1, "y": 0.2, "width": 0.05, "height": 0.07], "method": "gaussian_blur_r18"]
            let done = try await Self.call(harness, "upload-complete", token: token, ["version_id": version, "redactions": [redaction]])
            #expect(done.status == .accepted)
            #expect(Self.object(done) as NSDictionary == ["version_id": version, "status": "queued"] as NSDictionary)
            let again = try await Self.call(harness, "upload-complete", token: token, ["version_id": version, "redactions": [redaction]])
            #expect(again.status == .accepted && Self.object(again)["status"] as? String == "queued")

            let records = try harness.readTopic(harness.configuration.roomTranscodeTopic, expecting: 2)
            #expect(records.count == 1)
            let request = try ContractCoding.decoder.decode(RoomTranscodeRequest.self, from: Data((records.first?.value ?? "").utf8))
            #expect(request.roomId == room && request.versionId == version && request.ownerUserId == "app-owner")
            #expect(request.title == "客厅" && request.tags == ["living room"] && request.visibility == .public)
            #expect(request.source.usdzBytes == 2000 && request.source.roomplanJsonBytes == 300 && request.locationCity == "上海")
            #expect(request.redactions.map(\.textureRef) == ["Textures/wall_0.png"])
            #expect(try await store.head(request.source.usdzKey)?.size == 2000)
        }
    }

    @Test("a 11 MiB scan without bytes_json: presigned_usdz_parts, one URL per 5 MiB part (a re-sign answers them again), a JSON URL of any size up to json_max_bytes; upload-complete assembles the parts itself and charges the JSON's real size")
    func multipartWithoutJSONSize() async throws {
        try await Uploads.withStack(Uploads.smallPartsConfiguration) { harness, store in
            let token = harness.userToken("app-multipart")
            let size = 11 << 20
            var body = Self.initBody
            body["bytes_source"] = size
            body["bytes_json"] = nil
            let answer = Self.object(try await Self.call(harness, "upload-init", token: token, body))
            // Beside the parts, the whole-object PUT the app reads whatever the size.
            #expect(answer["presigned_usdz"] is String)
            let parts = try #require(answer["presigned_usdz_parts"] as? [[String: Any]])
            #expect(parts.map { $0["part_number"] as? Int } == [1, 2, 3])
            #expect(parts.map { $0["bytes"] as? Int } == [5 << 20, 5 << 20, 1 << 20])
            #expect(answer["json_max_bytes"] as? Int == 5 << 20)
            let version = try #require(answer["version_id"] as? String)
            // What was reserved: the scan and the most the JSON may hold.
            #expect(try await Uploads.quota(harness, token).usedBytes == Int64(size + (5 << 20)))

            // Re-signed, a multipart upload answers its parts again: the same numbers and sizes, URLs that take the PUTs.
            var again = body
            again["version_id"] = version
            let resigned = try await Self.call(harness, "upload-init", token: token, again)
            #expect(resigned.status == .ok && Self.object(resigned)["presigned_usdz"] is String)
            let resignedParts = try #require(Self.object(resigned)["presigned_usdz_parts"] as? [[String: Any]])
            #expect(resignedParts.map { $0["part_number"] as? Int } == [1, 2, 3])
            #expect(resignedParts.map { $0["bytes"] as? Int } == [5 << 20, 5 << 20, 1 << 20])
            #expect(try await Uploads.quota(harness, token).usedBytes == Int64(size + (5 << 20)))

            for part in resignedParts {
                let path = Uploads.file(try #require(part["bytes"] as? Int), fill: UInt8(try #require(part["part_number"] as? Int)))
                defer { try? FileManager.default.removeItem(atPath: path) }
                #expect(try await PlainHTTP.send("PUT", try #require(part["url"] as? String), file: path).status == 200)
            }
            let json = Uploads.file(4321, fill: 0x7B)
            defer { try? FileManager.default.removeItem(atPath: json) }
            #expect(try await PlainHTTP.send("PUT", try #require(answer["presigned_json"] as? String), file: json).status == 200)

            let done = try await Self.call(harness, "upload-complete", token: token, ["version_id": version])
            #expect(done.status == .accepted, "\(String(decoding: done.body, as: UTF8.self))")
            let request = try ContractCoding.decoder.decode(
                RoomTranscodeRequest.self, from: Data((try harness.readTopic(harness.configuration.roomTranscodeTopic, expecting: 1)
                    .first?.value ?? "").utf8))
            #expect(request.source.roomplanJsonBytes == 4321 && request.source.usdzBytes == Int64(size))
            #expect(try await store.head(request.source.usdzKey)?.size == Int64(size))
            #expect(try await Uploads.quota(harness, token).usedBytes == Int64(size + 4321))
        }
    }

    @Test("without bytes_json, a roomplan.json over json_max_bytes: the URL takes the PUT, upload-complete refuses with 409 UPLOAD_INCOMPLETE and queues nothing; one within the limit then completes")
    func jsonOverTheLimit() async throws {
        var configuration = IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000)
        configuration.maxRoomplanJsonBytes = 4096
        try await Uploads.withStack(configuration) { harness, _ in
            let token = harness.userToken("app-big-json")
            var body = Self.initBody
            body["bytes_json"] = nil
            let answer = Self.object(try await Self.call(harness, "upload-init", token: token, body))
            #expect(answer["json_max_bytes"] as? Int == 4096)
            let version = try #require(answer["version_id"] as? String)
            let usdz = Uploads.file(2000), big = Uploads.file(4097, fill: 0x7B), fits = Uploads.file(4096, fill: 0x7B)
            defer { for path in [usdz, big, fits] { try? FileManager.default.removeItem(atPath: path) } }
            let jsonURL = try #require(answer["presigned_json"] as? String)
            #expect(try await PlainHTTP.send("PUT", try #require(answer["presigned_usdz"] as? String), file: usdz).status == 200)
            #expect(try await PlainHTTP.send("PUT", jsonURL, file: big).status == 200)

            let refused = try await Self.call(harness, "upload-complete", token: token, ["version_id": version, "redactions": []])
            #expect(refused.status == .conflict && Self.isSeedError(refused, "UPLOAD_INCOMPLETE"))
            #expect(refused.json?["error"]?["message"]?.stringValue?.contains("at most 4096") == true,
                    "\(String(decoding: refused.body, as: UTF8.self))")
            #expect(try harness.readTopic(harness.configuration.roomTranscodeTopic, expecting: 1).isEmpty, "nothing was queued")

            #expect(try await PlainHTTP.send("PUT", jsonURL, file: fits).status == 200)
            let done = try await Self.call(harness, "upload-complete", token: token, ["version_id": version, "redactions": []])
            #expect(done.status == .accepted)
            let records = try harness.readTopic(harness.configuration.roomTranscodeTopic, expecting: 2)
            #expect(records.count == 1)
            let request = try ContractCoding.decoder.decode(RoomTranscodeRequest.self, from: Data((records.first?.value ?? "").utf8))
            #expect(request.source.roomplanJsonBytes == 4096)
        }
    }

    @Test("the multipart threshold with the default settings: bytes_source of exactly 30 MiB gets one presigned_usdz, one byte more gets presigned_usdz_parts (six 5 MiB parts and one of 1 byte) beside presigned_usdz")
    func multipartThreshold() async throws {
        try await Uploads.withStack { harness, _ in
            #expect(harness.configuration.multipartThresholdBytes == 30 << 20 && harness.configuration.multipartPartBytes == 5 << 20)
            let token = harness.userToken("app-threshold")
            var body = Self.initBody
            body["bytes_source"] = 30 << 20
            let single = Self.object(try await Self.call(harness, "upload-init", token: token, body))
            #expect(single["presigned_usdz"] is String && single["presigned_usdz_parts"] == nil, "\(single.keys.sorted())")
            body["bytes_source"] = (30 << 20) + 1
            let parted = Self.object(try await Self.call(harness, "upload-init", token: token, body))
            #expect(parted["presigned_usdz"] is String && parted["part_size"] as? Int == 5 << 20)
            let parts = try #require(parted["presigned_usdz_parts"] as? [[String: Any]])
            #expect(parts.map { $0["part_number"] as? Int } == Array(1...7))
            #expect(parts.map { $0["bytes"] as? Int } == Array(repeating: 5 << 20, count: 6) + [1])
        }
    }

    @Test("the seed's codes: coordinates and a coordinate-shaped city are INVALID_FIELD, nine tags INVALID_TAGS, 60 MB FILE_TOO_LARGE, a bad redaction REDACTION_INVALID, no token UNAUTHENTICATED, another user's version FORBIDDEN, an unknown one NOT_FOUND — nothing reserved by any")
    func codes() async throws {
        try await Uploads.withStack { harness, _ in
            let token = harness.userToken("app-codes")
            func initCode(_ change: (inout [String: Any]) -> Void) async throws -> String? {
                var body = Self.initBody
                change(&body)
                return try await Self.call(harness, "upload-init", token: token, body).errorCode
            }
            #expect(try await initCode { $0["latitude"] = 31.23; $0["longitude"] = 121.47 } == "INVALID_FIELD")
            #expect(try await initCode { $0["location"] = ["lat": 31.2, "lng": 121.4] } == "INVALID_FIELD")
            #expect(try await initCode { $0["location_city"] = "31.2304, 121.4737" } == "INVALID_FIELD")
            #expect(try await initCode { $0["location_city"] = String(repeating: "城", count: 101) } == "INVALID_FIELD")
            #expect(try await initCode { $0["tags"] = (1...9).map { "t\($0)" } } == "INVALID_TAGS")
            #expect(try await initCode { $0["tags"] = "living room" } == "INVALID_TAGS")
            #expect(try await initCode { $0["bytes_source"] = 60 << 20 } == "FILE_TOO_LARGE")
            #expect(try await initCode { $0["bytes_source"] = nil } == "INVALID_FIELD")
            let missing = try await Self.call(harness, "upload-init", token: token, ["title": "x", "tags": [], "visibility": "public"])
            #expect(missing.json?["error"]?["message"]?.stringValue == "missing field bytes_source")
            // Errors name the fields as the app wrote them, and say what is wrong with a number.
            var negative = Self.initBody
            negative["bytes_source"] = -1
            let refused = try await Self.call(harness, "upload-init", token: token, negative)
            #expect(refused.errorCode == "INVALID_FIELD" && refused.json?["error"]?["message"]?.stringValue == "bytes_source must be positive")
            for absurd: Any in [1.5, 1e30] {
                var body = Self.initBody
                body["bytes_source"] = absurd
                let answer = try await Self.call(harness, "upload-init", token: token, body)
                #expect(answer.errorCode == "INVALID_FIELD"
                        && answer.json?["error"]?["message"]?.stringValue?.contains("does not fit its field") == true, "\(absurd)")
            }
            #expect(try await Self.call(harness, "upload-init", token: nil, Self.initBody).errorCode == "UNAUTHENTICATED")
            #expect(try await Self.call(harness, "quota", method: .get, token: nil).status == .unauthorized)
            #expect(try await Uploads.quota(harness, token).usedBytes == 0)

            let answer = Self.object(try await Self.call(harness, "upload-init", token: token, Self.initBody))
            let version = try #require(answer["version_id"] as? String)
            let badRedaction = try await Self.call(harness, "upload-complete", token: token,
                                                   ["version_id": version, "redactions": [["kind": "face"]]])
            #expect(badRedaction.errorCode == "REDACTION_INVALID")
            let stranger = try await Self.call(harness, "upload-complete", token: harness.userToken("app-stranger"),
                                               ["version_id": version, "redactions": []])
            #expect(stranger.status == .forbidden)
            let unknown = try await Self.call(harness, "upload-complete", token: token,
                                              ["version_id": UUID().uuidString, "redactions": []])
            #expect(unknown.status == .notFound)
            #expect(try await Self.call(harness, "upload-complete", token: token, ["version_id": "x"]).errorCode == "INVALID_FIELD")
        }
    }

    @Test("re-sign (upload-init with version_id, as on STORAGE_FORBIDDEN or 30 s before expires_at): 200, the same room and version, fresh URLs with a later expires_at that take the PUTs, nothing charged again; once completed, 409 INVALID_FIELD")
    func resign() async throws {
        try await Uploads.withStack { harness, _ in
            let token = harness.userToken("app-resign")
            let first = Self.object(try await Self.call(harness, "upload-init", token: token, Self.initBody))
            let version = try #require(first["version_id"] as? String)
            // Presigned URLs carry their signing time to the second: a re-sign a second later signs anew.
            try await Task.sleep(for: .milliseconds(1100))
            var again = Self.initBody
            again["version_id"] = version
            let resigned = try await Self.call(harness, "upload-init", token: token, again)
            #expect(resigned.status == .ok)
            let answer = Self.object(resigned)
            #expect(Set(answer.keys) == ["room_id", "version_id", "status", "presigned_usdz", "presigned_json", "expires_at"])
            #expect(answer["version_id"] as? String == version && answer["room_id"] as? String == first["room_id"] as? String)
            #expect(answer["status"] as? String == "uploading")
            let usdzURL = try #require(answer["presigned_usdz"] as? String), jsonURL = try #require(answer["presigned_json"] as? String)
            #expect(usdzURL != first["presigned_usdz"] as? String && jsonURL != first["presigned_json"] as? String)
            // Both in the same ISO 8601 form (UTC, milliseconds): their order is the strings' order.
            let expiresAt = try #require(answer["expires_at"] as? String), firstExpiresAt = try #require(first["expires_at"] as? String)
            #expect(expiresAt > firstExpiresAt)
            #expect(try await Uploads.quota(harness, token).usedBytes == 2300, "a re-sign charges nothing")

            let usdz = Uploads.file(2000), json = Uploads.file(300, fill: 0x7B)
            defer { for path in [usdz, json] { try? FileManager.default.removeItem(atPath: path) } }
            #expect(try await PlainHTTP.send("PUT", usdzURL, file: usdz).status == 200)
            #expect(try await PlainHTTP.send("PUT", jsonURL, file: json).status == 200)
            let done = try await Self.call(harness, "upload-complete", token: token, ["version_id": version, "redactions": []])
            #expect(done.status == .accepted)

            let late = try await Self.call(harness, "upload-init", token: token, again)
            #expect(late.status == .conflict && late.errorCode == "INVALID_FIELD", "\(String(decoding: late.body, as: UTF8.self))")
            #expect(try await Uploads.quota(harness, token).usedBytes == 2300)
        }
    }

    /// Whether `response` is the seed's error shape, `{"error":{"code","message"}}` and nothing more, with `code`.
    static func isSeedError(_ response: HTTPResponse, _ code: String) -> Bool {
        let object = Self.object(response)
        guard Set(object.keys) == ["error"], let error = object["error"] as? [String: Any] else { return false }
        return Set(error.keys) == ["code", "message"] && error["code"] as? String == code && !(error["message"] as? String ?? "").isEmpty
    }

    @Test("upload-init over the monthly quota: 403 QUOTA_EXCEEDED in the seed's error shape, nothing reserved; what still fits is accepted")
    func quotaExceeded() async throws {
        try await Uploads.withStack(IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000, monthlyUploadQuotaBytes: 10_000)) { harness, _ in
            let token = harness.userToken("app-quota")
            var body = Self.initBody
            body["bytes_source"] = 9_800
            let over = try await Self.call(harness, "upload-init", token: token, body)
            #expect(over.status == .forbidden && Self.isSeedError(over, "QUOTA_EXCEEDED"), "\(String(decoding: over.body, as: UTF8.self))")
            let quota = Self.object(try await Self.call(harness, "quota", method: .get, token: token))
            #expect((quota["storage"] as? [String: Any])?["used"] as? Int == 0)
            #expect(try await Self.call(harness, "upload-init", token: token, Self.initBody).status == .created)
        }
    }

    @Test("upload-init called too often: 429 RATE_LIMITED in the seed's error shape with Retry-After (the app's 30 s cool-down); another user unaffected")
    func rateLimited() async throws {
        try await Uploads.withStack(IngestConfiguration(rateLimitPerSecond: 0.01, rateLimitBurst: 2)) { harness, _ in
            let token = harness.userToken("app-hasty")
            for _ in 0..<2 { #expect(try await Self.call(harness, "upload-init", token: token, Self.initBody).status == .created) }
            let limited = try await Self.call(harness, "upload-init", token: token, Self.initBody)
            #expect(limited.status == .tooManyRequests && Self.isSeedError(limited, "RATE_LIMITED"),
                    "\(String(decoding: limited.body, as: UTF8.self))")
            #expect(limited.headers["Retry-After"] != nil)
            #expect(try await Self.call(harness, "upload-init", token: harness.userToken("app-patient"), Self.initBody).status == .created)
        }
    }

    @Test("Kafka down at upload-complete: 503 WORKER_UNAVAILABLE with Retry-After (the app resends in 60 s); once it is back the same call is 202 and exactly one transcode request")
    func workerUnavailable() async throws {
        try await Uploads.withStack { harness, _ in
            let token = harness.userToken("app-offline")
            let answer = Self.object(try await Self.call(harness, "upload-init", token: token, Self.initBody))
            let usdz = Uploads.file(2000), json = Uploads.file(300)
            defer { for path in [usdz, json] { try? FileManager.default.removeItem(atPath: path) } }
            #expect(try await PlainHTTP.send("PUT", try #require(answer["presigned_usdz"] as? String), file: usdz).status == 200)
            #expect(try await PlainHTTP.send("PUT", try #require(answer["presigned_json"] as? String), file: json).status == 200)
            let body: [String: Any] = ["version_id": try #require(answer["version_id"] as? String), "redactions": []]

            try harness.cluster.setAllBrokersDown()
            let down = try await Self.call(harness, "upload-complete", token: token, body)
            try harness.cluster.setAllBrokersUp()
            #expect(down.status == .serviceUnavailable && down.errorCode == "WORKER_UNAVAILABLE")
            #expect(down.headers["Retry-After"] != nil)
            let back = try await Self.call(harness, "upload-complete", token: token, body)
            #expect(back.status == .accepted && Self.object(back)["status"] as? String == "queued")
            #expect(try harness.readTopic(harness.configuration.roomTranscodeTopic, expecting: 2).count == 1)
        }
    }

    @Test("Supabase's own client (supabase_functions), holding an ES256 Supabase Auth session that PyJWT minted and whose JWKS ingest reads, runs Flow A over HTTP: quota, upload-init, PUTs, upload-complete; account-delete scheduled, seen and cancelled, in snake_case; the anon key is UNAUTHENTICATED")
    func supabaseClient() async throws {
        let witness = try TokenWitness.shared()
        let tokens = TokenVerificationSettings(keySet: .file(try witness.keySetFile()), issuer: TokenWitness.issuer,
                                               audience: TokenWitness.audience)
        try await SeaweedFSFixture.with { s3 in
            try await IngestHarness.with(configuration: Uploads.smallPartsConfiguration, objects: S3ObjectStore(configuration: s3),
                                         secret: TokenWitness.secret, tokens: tokens) { harness in
                let port = try await harness.startHTTP()
                let script = Self.clients.appendingPathComponent("functions_client.py").path
                let arguments = [script, "http://127.0.0.1:\(port)", try witness.token("es256")]
                let (status, output) = try await withCheckedThrowingContinuation { continuation in
                    DispatchQueue.global().async {
                        continuation.resume(with: Result { try Integration.run(TokenWitness.python, arguments) })
                    }
                }
                #expect(status == 0, "\(output)")
                let result = (try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? [String: Any] ?? [:]
                #expect(result["quota_tier"] as? String == "free")
                #expect(result["single"] as? String == "queued")
                #expect(result["multipart_parts"] as? Int == 3)
                #expect(result["multipart"] as? String == "queued")
                #expect(result["delete_scheduled"] as? String == "scheduled")
                #expect(result["delete_seen"] as? String == "scheduled")
                #expect(result["delete_cancelled"] as? String == "cancelled")
                #expect(result["error_code"] as? String == "INVALID_TAGS")
                #expect(try harness.readTopic(harness.configuration.roomTranscodeTopic, expecting: 3).count == 2)
                let anon = try await Self.call(harness, "quota", method: .get, token: try witness.token("anon"))
                #expect(anon.status == .unauthorized && anon.errorCode == "UNAUTHENTICATED")
            }
        }
    }
}
