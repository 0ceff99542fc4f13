import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import Ingest
import JSON
import Kafka
import Lifecycle
import ObjectStore
import Postgres
import Projection
import ServiceLogging
import ServiceRuntime
import Testing

/// The three-step upload as the app runs it, against a real SeaweedFS, PostgreSQL and the
/// embedded Kafka broker; the PUTs go through `curl` with nothing but the presigned URL.
@Suite("Room uploads: quota, upload-init, direct PUT, upload-complete, sweep", .serialized,
       .enabled(if: Integration.isEnabled), .timeLimit(.minutes(5)))
struct RoomUploadIntegrationTests {
    static func withStack(_ configuration: IngestConfiguration = IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000),
                          _ body: (IngestHarness, S3ObjectStore) async throws -> Void) async throws {
        try await SeaweedFSFixture.with { s3 in
            let store = S3ObjectStore(configuration: s3)
            try await IngestHarness.with(configuration: configuration, objects: store) { harness in try await body(harness, store) }
        }
    }

    /// Multipart from 5 MiB on (the smallest part S3 allows), so an 11 MiB scan has three parts.
    static var smallPartsConfiguration: IngestConfiguration {
        var configuration = IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000)
        configuration.multipartThresholdBytes = 5 << 20
        return configuration
    }

    static func file(_ bytes: Int, fill: UInt8 = 0x41) -> String {
        let path = NSTemporaryDirectory() + "upload-\(UInt32.random(in: 0...UInt32.max))"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: fill, count: bytes)))
        return path
    }

    static func initBody(usdz: Int64, json: Int64) -> RoomUploadInitRequest {
        RoomUploadInitRequest(title: "客厅", tags: ["living room"], visibility: .public, usdzBytes: usdz, roomplanJsonBytes: json)
    }

    /// upload-init for a scan of `usdz` bytes and a RoomPlan JSON of `json` bytes (filled with
    /// `jsonFill`) as `token`'s user, then both PUT to their presigned URLs (each answered 200).
    static func uploaded(_ harness: IngestHarness, token: String, usdz: Int, json: Int,
                         jsonFill: UInt8 = 0x41) async throws -> RoomUploadInitResponse {
        let answer = try await harness.request(.post, "/rooms/uploads", token: token,
                                               body: try ContractCoding.encode(Self.initBody(usdz: Int64(usdz), json: Int64(json))))
            .decoded(RoomUploadInitResponse.self)
        let usdzFile = Self.file(usdz), jsonFile = Self.file(json, fill: jsonFill)
        defer { for path in [usdzFile, jsonFile] { try? FileManager.default.removeItem(atPath: path) } }
        #expect(try await PlainHTTP.send("PUT", try #require(answer.usdz.url), headers: answer.usdz.headers, file: usdzFile).status == 200)
        #expect(try await PlainHTTP.send("PUT", try #require(answer.roomplanJson.url), file: jsonFile).status == 200)
        return answer
    }

    static func complete(_ answer: RoomUploadInitResponse, parts: [UploadedPart]? = nil,
                         sha256: String? = nil) -> RoomVersionCompleteRequest {
        RoomVersionCompleteRequest(
            roomId: answer.roomId, versionId: answer.versionId, title: "客厅", tags: ["living room"], visibility: .public,
            source: RoomSource(usdzKey: answer.usdz.key, usdzBytes: answer.usdz.bytes, roomplanJsonKey: answer.roomplanJson.key,
                               roomplanJsonBytes: answer.roomplanJson.bytes, sha256: sha256),
            redactions: [], usdzParts: parts, scan: ScanSummary(durationSeconds: 312))
    }

    static func quota(_ harness: IngestHarness, _ token: String) async throws -> RoomQuota {
        try await harness.request(.get, "/rooms/quota", token: token, body: []).decoded(RoomQuota.self)
    }

    @Test("quota → init → complete too early (409) → PUT both → complete (202, once) → one transcode request")
    func appSequence() async throws {
        try await Self.withStack { harness, store in
            let token = harness.userToken("owner-1")
            #expect(try await Self.quota(harness, token).usedBytes == 0)

            let created = await harness.request(.post, "/rooms/uploads", token: token,
                                                body: try ContractCoding.encode(Self.initBody(usdz: 2000, json: 300)))
            #expect(created.status == .created)
            let answer = try created.decoded(RoomUploadInitResponse.self)
            #expect(answer.status == "uploading" && answer.usdz.parts == nil && answer.usdz.url != nil)
            #expect(answer.expiresAt.timeIntervalSinceNow > 800 && answer.expiresAt.timeIntervalSinceNow <= 900)
            let quota = try await Self.quota(harness, token)
            #expect(quota.usedBytes == 2300 && quota.remainingBytes == quota.limitBytes - 2300 && quota.tier == "free")

            let sha = String(repeating: "ab", count: 32)
            let body = try ContractCoding.encode(Self.complete(answer, sha256: sha))
            let early = await harness.request(.post, "/rooms/versions", token: token, body: body)
            #expect(early.status == .conflict)
            #expect(early.errorCode == "UPLOAD_INCOMPLETE")
            #expect(early.json?["error"]?["message"]?.stringValue?.contains("source.usdz") == true)

            let usdz = Self.file(2000)
            let json = Self.file(300, fill: 0x7B)
            defer { for path in [usdz, json] { try? FileManager.default.removeItem(atPath: path) } }
            let putUSDZ = try await PlainHTTP.send("PUT", try #require(answer.usdz.url), headers: answer.usdz.headers, file: usdz)
            #expect(putUSDZ.status == 200)
            let halfway = await harness.request(.post, "/rooms/versions", token: token, body: body)
            #expect(halfway.status == .conflict)
            #expect(halfway.json?["error"]?["message"]?.stringValue?.contains("roomplan.json") == true)
            let putJSON = try await PlainHTTP.send("PUT", try #require(answer.roomplanJson.url), headers: answer.roomplanJson.headers,
                                                   file: json)
            #expect(putJSON.status == 200)

            let done = await harness.request(.post, "/rooms/versions", token: token, body: body)
            #expect(done.status == .accepted)
            #expect(try done.decoded(RoomVersionAccepted.self).status == .queued)
            let again = await harness.request(.post, "/rooms/versions", token: token, body: body)
            #expect(again.status == .accepted)

            let records = try harness.readTopic(harness.configuration.roomTranscodeTopic, expecting: 2)
            #expect(records.count == 1)
            let request = try ContractCoding.decoder.decode(RoomTranscodeRequest.self, from: Data((records.first?.value ?? "").utf8))
            #expect(records.first?.key == answer.roomId)
            #expect(request.source.usdzKey == "rooms/\(answer.roomId)/\(answer.versionId)/source.usdz")
            #expect(request.source.sha256 == sha && request.scan?.durationSeconds == 312 && request.ownerUserId == "owner-1")
            #expect(try await store.head(request.source.usdzKey)?.size == 2000)
            #expect(try await Self.quota(harness, token).usedBytes == 2300)

            // The worker's statuses reach ingest through the status topic: the same versionId
            // again answers where the version got to, and still queues nothing.
            let follower = try #require(harness.parts.background.first { $0.name == "ingest-room-status" })
            let following = Task { try await follower.run() }
            defer { following.cancel() }
            let ready = RoomTranscodeStatus(roomId: answer.roomId, versionId: answer.versionId, ownerUserId: "owner-1",
                                            visibility: .public, status: .ready, at: Date())
            _ = try await harness.context.producer.send(KafkaProducerRecord(
                topic: harness.configuration.roomStatusTopic, key: Array(answer.roomId.utf8), value: try ContractCoding.encode(ready)))
            #expect(await Integration.eventually {
                let answer = await harness.request(.post, "/rooms/versions", token: token, body: body)
                return (try? answer.decoded(RoomVersionAccepted.self).status) == .ready
            })
            #expect(try harness.readTopic(harness.configuration.roomTranscodeTopic, expecting: 2).count == 1)
        }
    }

    @Test("nobody completes a version from another user's uploaded objects: an id upload-init never minted is 404, another's version 403, another's keys 400")
    func completeOnlyWhatInitMinted() async throws {
        try await Self.withStack { harness, _ in
            let owner = harness.userToken("victim")
            let answer = try await Self.uploaded(harness, token: owner, usdz: 1200, json: 200, jsonFill: 0x7B)

            let thief = harness.userToken("thief")
            // A version and room of the thief's own invention, over the victim's objects.
            var forged = Self.complete(answer)
            forged.roomId = UUID().uuidString.lowercased()
            forged.versionId = UUID().uuidString.lowercased()
            let invented = await harness.request(.post, "/rooms/versions", token: thief, body: try ContractCoding.encode(forged))
            #expect(invented.status == .notFound && invented.errorCode == "NOT_FOUND")
            // The victim's own version and room.
            let taken = await harness.request(.post, "/rooms/versions", token: thief, body: try ContractCoding.encode(Self.complete(answer)))
            #expect(taken.status == .forbidden && taken.errorCode == "FORBIDDEN")
            // A version upload-init minted for the thief, naming the victim's keys.
            let own = try await harness.request(.post, "/rooms/uploads", token: thief,
                                                body: try ContractCoding.encode(Self.initBody(usdz: 1200, json: 200)))
                .decoded(RoomUploadInitResponse.self)
            var swapped = Self.complete(own)
            swapped.source = Self.complete(answer).source
            let keys = await harness.request(.post, "/rooms/versions", token: thief, body: try ContractCoding.encode(swapped))
            #expect(keys.status == .badRequest && keys.errorCode == "INVALID_FIELD")
            #expect(try harness.readTopic("room.transcode.requests.v1", expecting: 1).isEmpty)
            let versions = try await harness.context.database.query(
                "SELECT count(*)::bigint AS n FROM room_versions WHERE owner_user_id = 'thief' AND status <> 'uploading'", [])
            #expect(try versions.first?.decode(Int.self, "n") == 0)

            // The owner's completion still goes through, once.
            let accepted = await harness.request(.post, "/rooms/versions", token: owner, body: try ContractCoding.encode(Self.complete(answer)))
            #expect(accepted.status == .accepted)
            #expect(try harness.readTopic("room.transcode.requests.v1", expecting: 2).count == 1)
        }
    }

    @Test("upload-init retried with the same Idempotency-Key (or clientUploadId) answers the same room and version, charged once, even twice at once; the key with another request is 422 IDEMPOTENCY_KEY_REUSED; without a key each init is a new version")
    func idempotentInit() async throws {
        try await Self.withStack { harness, _ in
            let token = harness.userToken("retrier")
            let body = try ContractCoding.encode(Self.initBody(usdz: 1500, json: 200))
            let key = [("Idempotency-Key", "task-\(UUID().uuidString)")]
            let first = await harness.request(.post, "/rooms/uploads", token: token, body: body, headers: key)
            #expect(first.status == .created)
            let answer = try first.decoded(RoomUploadInitResponse.self)
            let again = await harness.request(.post, "/rooms/uploads", token: token, body: body, headers: key)
            #expect(again.status == .created && again.headers["Idempotent-Replayed"] == "true")
            let replayed = try again.decoded(RoomUploadInitResponse.self)
            #expect(replayed.roomId == answer.roomId && replayed.versionId == answer.versionId && replayed.usdz.key == answer.usdz.key)
            #expect(try await Self.quota(harness, token).usedBytes == 1700, "charged once")

            // The seed's clientTaskId in the body is the same key.
            var withID = Self.initBody(usdz: 1500, json: 200)
            withID.clientUploadId = key[0].1
            let inBody = await harness.request(.post, "/rooms/uploads", token: token, body: try ContractCoding.encode(withID))
            #expect(try inBody.decoded(RoomUploadInitResponse.self).versionId == answer.versionId)

            let reused = await harness.request(.post, "/rooms/uploads", token: token,
                                               body: try ContractCoding.encode(Self.initBody(usdz: 9999, json: 200)), headers: key)
            #expect(reused.status == .unprocessableEntity && reused.errorCode == "IDEMPOTENCY_KEY_REUSED")
            let hostile = await harness.request(.post, "/rooms/uploads", token: token, body: body,
                                                headers: [("Idempotency-Key", String(repeating: "k", count: 300))])
            #expect(hostile.status == .badRequest && hostile.errorCode == "INVALID_FIELD")

            // Keys are the user's own: another user's same key is another upload.
            let other = await harness.request(.post, "/rooms/uploads", token: harness.userToken("someone-else"), body: body, headers: key)
            #expect(try other.decoded(RoomUploadInitResponse.self).versionId != answer.versionId)

            // Two at once (the app's retry racing the first): one version, charged once.
            let racing = [("Idempotency-Key", "race-\(UUID().uuidString)")]
            async let a = harness.request(.post, "/rooms/uploads", token: token, body: body, headers: racing)
            async let b = harness.request(.post, "/rooms/uploads", token: token, body: body, headers: racing)
            let (ra, rb) = await (a, b)
            #expect(ra.status == .created && rb.status == .created)
            #expect(try ra.decoded(RoomUploadInitResponse.self).versionId == rb.decoded(RoomUploadInitResponse.self).versionId)
            #expect(try await Self.quota(harness, token).usedBytes == 3400)

            // Without a key, as before: each init is a version of its own.
            let plain1 = try await harness.request(.post, "/rooms/uploads", token: token, body: body).decoded(RoomUploadInitResponse.self)
            let plain2 = try await harness.request(.post, "/rooms/uploads", token: token, body: body).decoded(RoomUploadInitResponse.self)
            #expect(plain1.versionId != plain2.versionId)
            let versions = try await harness.context.database.query(
                "SELECT count(*)::bigint AS n FROM room_versions WHERE owner_user_id = 'retrier'", [])
            #expect(try versions.first?.decode(Int.self, "n") == 4)
        }
    }

    @Test("uploads whose app never calls upload-complete are completed by the server once every object (or part) is there and quiet, single and multipart, with upload-init's redactions; the sweep abandons only incomplete ones; a late upload-complete answers the current status")
    func serverCompletion() async throws {
        try await Self.withStack(Self.smallPartsConfiguration) { harness, store in
            let token = harness.userToken("background-phone")
            let redaction = Redaction(textureRef: "textures/0.png", kind: .face,
                                      region: RedactionRegion(x: 0.1, y: 0.1, width: 0.2, height: 0.2), method: "gaussian")
            func initiate(usdz: Int64, json: Int64) async throws -> RoomUploadInitResponse {
                var body = Self.initBody(usdz: usdz, json: json)
                body.redactions = [redaction]
                let created = await harness.request(.post, "/rooms/uploads", token: token, body: try ContractCoding.encode(body))
                #expect(created.status == .created, "\(String(decoding: created.body, as: UTF8.self))")
                return try created.decoded(RoomUploadInitResponse.self)
            }
            var files: [String] = []
            defer { for path in files { try? FileManager.default.removeItem(atPath: path) } }
            func put(_ url: String?, _ bytes: Int64) async throws {
                let path = Self.file(Int(bytes))
                files.append(path)
                #expect(try await PlainHTTP.send("PUT", try #require(url), file: path).status == 200)
            }
            // A: single, both objects PUT. B: multipart (5+5+1 MB), every part PUT.
            // C: multipart with a part missing. D: roomplan.json only.
            let a = try await initiate(usdz: 1500, json: 200)
            try await put(a.usdz.url, 1500); try await put(a.roomplanJson.url, 200)
            let b = try await initiate(usdz: 11 << 20, json: 300)
            let bParts = try #require(b.usdz.parts)
            #expect(bParts.count == 3)
            for part in bParts { try await put(part.url, part.bytes) }
            try await put(b.roomplanJson.url, 300)
            let c = try await initiate(usdz: 11 << 20, json: 300)
            for part in try #require(c.usdz.parts).prefix(2) { try await put(part.url, part.bytes) }
            try await put(c.roomplanJson.url, 300)
            let d = try await initiate(usdz: 1500, json: 200)
            try await put(d.roomplanJson.url, 200)

            let service = IngestService(context: harness.context, configuration: harness.configuration, objects: store)
            let completer = try #require(service.roomUploadCompleter())
            // Just uploaded: not quiet yet (INGEST_AUTO_COMPLETE_AFTER_SECONDS, 120 s).
            #expect(try await completer.completeOnce().isEmpty)
            // A day later, before anything completed them: the sweep keeps A and B, whose objects are all there.
            let sweeper = RoomUploadSweeper(uploads: RoomUploadStore(database: harness.context.database), objects: store,
                                            completer: completer, logger: .disabled)
            #expect(try await sweeper.sweepOnce(now: Date().addingTimeInterval(2 * 86_400)) == 2)
            // Quiet for longer than 120 s: A and B completed, once.
            let completed = try await completer.completeOnce(now: Date().addingTimeInterval(200))
            #expect(Set(completed) == [a.versionId, b.versionId])
            #expect(try await completer.completeOnce(now: Date().addingTimeInterval(300)).isEmpty)
            #expect(try await store.head(b.usdz.key)?.size == 11 << 20, "the parts were assembled")

            let requests = try harness.readTopic("room.transcode.requests.v1", expecting: 3)
            #expect(requests.count == 2)
            let sent = try requests.map { try ContractCoding.decoder.decode(RoomTranscodeRequest.self, from: Data($0.value.utf8)) }
            #expect(Set(sent.map(\.versionId)) == [a.versionId, b.versionId])
            #expect(sent.allSatisfy { $0.redactions == [redaction] && $0.ownerUserId == "background-phone" })
            let statuses = try await harness.context.database.query(
                "SELECT version_id, status FROM room_versions WHERE owner_user_id = 'background-phone' ORDER BY version_id", [])
            #expect(Set(try statuses.map { try $0.decode(String.self, "status") }) == ["queued"], "C and D abandoned, A and B queued")
            #expect(statuses.count == 2)

            // The app wakes up and confirms: the current status, no second request.
            let late = await harness.request(.post, "/rooms/versions", token: token, body: try ContractCoding.encode(Self.complete(a)))
            #expect(late.status == .accepted && (try? late.decoded(RoomVersionAccepted.self).status) == .queued)
            #expect(try harness.readTopic("room.transcode.requests.v1", expecting: 3).count == 2)
        }
    }

    @Test("Kafka down when the server completes an upload: the version stays pending, and once Kafka is back a later pass queues it, once")
    func serverCompletionWhileKafkaDown() async throws {
        try await Self.withStack { harness, store in
            let token = harness.userToken("offline-phone")
            let answer = try await Self.uploaded(harness, token: token, usdz: 1500, json: 200)
            let completer = try #require(IngestService(context: harness.context, configuration: harness.configuration, objects: store)
                .roomUploadCompleter())
            func status() async throws -> String? {
                try await harness.context.database.query("SELECT status FROM room_versions WHERE version_id = $1", [answer.versionId])
                    .first?.decode(String.self, "status")
            }
            try harness.cluster.setAllBrokersDown()
            #expect(try await completer.completeOnce(now: Date().addingTimeInterval(200)).isEmpty)
            #expect(try await status() == "pending")
            try harness.cluster.setAllBrokersUp()
            // Still pending for less than the quiet time: left alone.
            #expect(try await completer.completeOnce().isEmpty)
            #expect(try await completer.completeOnce(now: Date().addingTimeInterval(400)) == [answer.versionId])
            #expect(try await status() == "queued")
            #expect(try await completer.completeOnce(now: Date().addingTimeInterval(600)).isEmpty)
            #expect(try harness.readTopic("room.transcode.requests.v1", expecting: 2).count == 1)
        }
    }

    @Test("a relaunched app asks where its upload stands: what the store holds (parts with their ETags) and fresh URLs for only the missing ones; it PUTs those and completes; another user's upload is 404")
    func resumeAfterRelaunch() async throws {
        try await Self.withStack(Self.smallPartsConfiguration) { harness, _ in
            let token = harness.userToken("relaunched")
            let answer = try await harness.request(.post, "/rooms/uploads", token: token,
                                                   body: try ContractCoding.encode(Self.initBody(usdz: 11 << 20, json: 300)))
                .decoded(RoomUploadInitResponse.self)
            var files: [String] = []
            defer { for path in files { try? FileManager.default.removeItem(atPath: path) } }
            func put(_ url: String?, _ bytes: Int64) async throws -> PlainHTTP.Answer {
                let path = Self.file(Int(bytes))
                files.append(path)
                return try await PlainHTTP.send("PUT", try #require(url), file: path)
            }
            // Killed after the first part and the JSON.
            let first = try #require(answer.usdz.parts?.first)
            #expect(try await put(first.url, first.bytes).status == 200)
            #expect(try await put(answer.roomplanJson.url, 300).status == 200)

            let path = "/rooms/uploads/\(answer.versionId)"
            let state = try await harness.request(.get, path, token: token, body: []).decoded(RoomUploadStateResponse.self)
            #expect(state.status == "uploading" && state.roomplanJson == nil)
            #expect(Set(state.stored.map { $0.partNumber ?? 0 }) == [0, 1], "the JSON and part 1 are held")
            let missing = try #require(state.usdz?.parts)
            #expect(missing.map(\.partNumber) == [2, 3] && missing.map(\.bytes) == [5 << 20, 1 << 20])
            var etags = Dictionary(uniqueKeysWithValues: state.stored.compactMap { stored in stored.partNumber.map { ($0, stored.etag) } })
            for part in missing {
                let put = try await put(part.url, part.bytes)
                #expect(put.status == 200)
                etags[part.partNumber] = put.headers["etag"]
            }
            let after = try await harness.request(.get, path, token: token, body: []).decoded(RoomUploadStateResponse.self)
            #expect(after.usdz == nil && after.roomplanJson == nil && after.stored.count == 4)

            let parts = etags.sorted { $0.key < $1.key }.map { UploadedPart(partNumber: $0.key, etag: $0.value) }
            let completed = await harness.request(.post, "/rooms/versions", token: token,
                                                  body: try ContractCoding.encode(Self.complete(answer, parts: parts)))
            #expect(completed.status == .accepted, "\(String(decoding: completed.body, as: UTF8.self))")
            let done = try await harness.request(.get, path, token: token, body: []).decoded(RoomUploadStateResponse.self)
            #expect(done.status == "queued" && done.usdz == nil && done.stored.isEmpty)

            #expect(await harness.request(.get, path, token: harness.userToken("stranger"), body: []).status == .notFound)
            #expect(await harness.request(.get, "/rooms/uploads/not-a-uuid", token: token, body: []).errorCode == "INVALID_FIELD")
        }
    }

    @Test("the room endpoints are rate-limited per user: 429 RATE_LIMITED with Retry-After, another user unaffected")
    func rateLimited() async throws {
        try await Self.withStack(IngestConfiguration(rateLimitPerSecond: 0.01, rateLimitBurst: 2)) { harness, _ in
            let token = harness.userToken("hasty")
            let body = try ContractCoding.encode(Self.initBody(usdz: 1000, json: 100))
            #expect(await harness.request(.post, "/rooms/uploads", token: token, body: body).status == .created)
            #expect(await harness.request(.get, "/rooms/quota", token: token, body: []).status == .ok)
            let limited = await harness.request(.post, "/rooms/uploads", token: token, body: body)
            #expect(limited.status == .tooManyRequests)
            #expect(limited.errorCode == "RATE_LIMITED")
            #expect(limited.headers["Retry-After"] != nil)
            #expect(await harness.request(.post, "/rooms/versions", token: token, body: body).status == .tooManyRequests)
            #expect(await harness.request(.get, "/rooms/quota", token: harness.userToken("patient"), body: []).status == .ok)
        }
    }

    @Test("a 40 MB source.usdz: eight presigned 5 MB parts, completed through upload-complete with their ETags")
    func multipart() async throws {
        try await Self.withStack { harness, store in
            let token = harness.userToken("owner-2")
            let size: Int64 = 40 << 20
            let created = await harness.request(.post, "/rooms/uploads", token: token,
                                                body: try ContractCoding.encode(Self.initBody(usdz: size, json: 100)))
            #expect(created.status == .created)
            let answer = try created.decoded(RoomUploadInitResponse.self)
            let parts = try #require(answer.usdz.parts)
            #expect(parts.count == 8 && parts.allSatisfy { $0.bytes == 5 << 20 } && answer.usdz.url != nil)

            // Asking again re-signs the same upload without charging again.
            let resigned = await harness.request(.post, "/rooms/uploads", token: token, body: try ContractCoding.encode(
                RoomUploadInitRequest(title: "客厅", tags: [], visibility: .public, usdzBytes: size, roomplanJsonBytes: 100,
                                      versionId: answer.versionId)))
            #expect(resigned.status == .ok)
            let fresh = try resigned.decoded(RoomUploadInitResponse.self)
            #expect(fresh.versionId == answer.versionId && fresh.usdz.parts?.count == 8)
            #expect(try await Self.quota(harness, token).usedBytes == size + 100)

            var uploaded: [UploadedPart] = []
            for part in try #require(fresh.usdz.parts) {
                let path = Self.file(Int(part.bytes), fill: UInt8(part.partNumber))
                defer { try? FileManager.default.removeItem(atPath: path) }
                let put = try await PlainHTTP.send("PUT", part.url, file: path)
                #expect(put.status == 200)
                uploaded.append(UploadedPart(partNumber: part.partNumber, etag: put.headers["etag"] ?? ""))
            }
            let json = Self.file(100)
            defer { try? FileManager.default.removeItem(atPath: json) }
            #expect(try await PlainHTTP.send("PUT", try #require(fresh.roomplanJson.url), file: json).status == 200)

            let withoutParts = await harness.request(.post, "/rooms/versions", token: token,
                                                     body: try ContractCoding.encode(Self.complete(answer)))
            #expect(withoutParts.status == .conflict && withoutParts.errorCode == "UPLOAD_INCOMPLETE")
            let done = await harness.request(.post, "/rooms/versions", token: token,
                                             body: try ContractCoding.encode(Self.complete(answer, parts: uploaded)))
            #expect(done.status == .accepted)
            #expect(try await store.head(answer.usdz.key)?.size == size)
        }
    }

    @Test("quota: over the limit is QUOTA_EXCEEDED at init; an abandoned upload is swept, its bytes and objects gone; room.uploads.v1 announces the upload and its abandonment")
    func quotaAndSweep() async throws {
        var configuration = IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000, monthlyUploadQuotaBytes: 10_000)
        configuration.abandonUploadsAfter = .seconds(1)
        configuration.uploadSweepInterval = .seconds(3600)
        try await Self.withStack(configuration) { harness, store in
            let token = harness.userToken("owner-3")
            let first = await harness.request(.post, "/rooms/uploads", token: token,
                                              body: try ContractCoding.encode(Self.initBody(usdz: 5000, json: 1000)))
            #expect(first.status == .created)
            let answer = try first.decoded(RoomUploadInitResponse.self)
            let over = await harness.request(.post, "/rooms/uploads", token: token,
                                             body: try ContractCoding.encode(Self.initBody(usdz: 5000, json: 1000)))
            #expect(over.status == .forbidden && over.errorCode == "QUOTA_EXCEEDED")
            let big = await harness.request(.post, "/rooms/uploads", token: token,
                                            body: try ContractCoding.encode(Self.initBody(usdz: 60 << 20, json: 1)))
            #expect(big.status == .payloadTooLarge && big.errorCode == "FILE_TOO_LARGE")
            let tags = await harness.request(.post, "/rooms/uploads", token: token, body: try ContractCoding.encode(
                RoomUploadInitRequest(title: "x", tags: Array(repeating: "t", count: 9), visibility: .public, usdzBytes: 1,
                                      roomplanJsonBytes: 1)))
            #expect(tags.errorCode == "INVALID_TAGS")
            #expect(try await Self.quota(harness, token).usedBytes == 6000)

            // Upload-init announced the version (the refused ones nothing), for the room catalog.
            let outbox = RoomUploadStore.outbox(database: harness.context.database, producer: harness.context.producer,
                                                topic: harness.configuration.roomUploadsTopic)
            #expect(try await outbox.publishPending(olderThan: .zero, limit: 100) == 1)
            let announced = try harness.readTopic(harness.configuration.roomUploadsTopic, expecting: 1)
            let uploading = try ContractCoding.decoder.decode(RoomUploadEvent.self, from: Data((announced.first?.value ?? "").utf8))
            #expect(announced.first?.key == answer.roomId)
            #expect(uploading.status == .uploading && uploading.versionId == answer.versionId && uploading.ownerUserId == "owner-3")
            #expect(uploading.title == Self.initBody(usdz: 1, json: 1).title && uploading.expiresAt != nil)

            let json = Self.file(1000)
            defer { try? FileManager.default.removeItem(atPath: json) }
            #expect(try await PlainHTTP.send("PUT", try #require(answer.roomplanJson.url), file: json).status == 200)
            try await Task.sleep(for: .seconds(1.5))
            let sweeper = RoomUploadSweeper(uploads: RoomUploadStore(database: harness.context.database), objects: store,
                                            logger: .disabled)
            #expect(try await sweeper.sweepOnce() == 1)
            #expect(try await sweeper.sweepOnce() == 0)
            #expect(try await outbox.publishPending(olderThan: .zero, limit: 100) == 1)
            let both = try harness.readTopic(harness.configuration.roomUploadsTopic, expecting: 2)
            let abandoned = try ContractCoding.decoder.decode(RoomUploadEvent.self, from: Data((both.last?.value ?? "").utf8))
            #expect(both.count == 2 && both.last?.key == answer.roomId)
            #expect(abandoned.status == .abandoned && abandoned.versionId == answer.versionId)
            #expect(try await Self.quota(harness, token).usedBytes == 0)
            #expect(try await store.head(answer.roomplanJson.key) == nil)
            let late = await harness.request(.post, "/rooms/versions", token: token,
                                             body: try ContractCoding.encode(Self.complete(answer)))
            #expect(late.status != .accepted)
        }
    }
}
