import Auth
import Contracts
import Foundation

/// One run of the demo: a user, a material, a reading session, a room version.
struct DemoSession {
    let endpoints: DemoCommand.Endpoints
    let scan: DemoCommand.Scan
    let codec: JWTCodec
    let user: String
    let http = DemoHTTPClient()
    let materialID = UUID().uuidString.lowercased()
    let sessionID = UUID().uuidString.lowercased()

    var userToken: String { codec.issue(userID: user, ttl: 3600) }
    var serviceToken: String { codec.issue(userID: "backbone-demo", ttl: 600, role: "service") }

    func run() async throws {
        for (name, base) in [("ingest", endpoints.ingest), ("progress-projector", endpoints.progress),
                             ("analytics-aggregator", endpoints.analytics)] {
            _ = try await expect(200, "GET", service: name, base: base, path: "/healthz", token: nil)
        }
        say("== user \(user), material \(materialID)")

        let material = MaterialUpsertRequest(readingTargetType: .knowledgeSource, knowledgeBaseId: "demo-kb", ownerUserId: user)
        let put = try await expect(200, "PUT", service: "ingest", base: endpoints.ingest, path: "/materials/\(materialID)",
                                   token: serviceToken, body: try ContractCoding.encode(material))
        say("\n== PUT /materials/\(materialID) (service token) → \(put.status)\n\(put.pretty)")

        let batches = readingBatches()
        try await post(batches[0], label: "batch 1 of 3: opened, heartbeats to page 6")
        try await post(batches[1], label: "batch 2 of 3: heartbeat, position page 15")
        try await post(batches[1], label: "batch 2 resent (as after a timeout): every event is a duplicate")

        let reading = try await waitForProgress(status: "in_progress", percent: 75)
        say("\n== GET /materials/\(materialID)/reading-progress → \(reading.status)\n\(reading.pretty)")
        let next = try await expect(200, "GET", service: "progress-projector", base: endpoints.progress, path: "/learning/continue",
                                    token: userToken)
        say("\n== GET /learning/continue → \(next.status)\n\(next.pretty)")

        try await post(batches[2], label: "batch 3 of 3: last page, markedAsRead, closed")
        let done = try await waitForProgress(status: "completed", percent: 100)
        say("\n== GET /materials/\(materialID)/reading-progress → \(done.status)\n\(done.pretty)")
        let summary = try await waitForSummary()
        say("\n== GET /learning/summary → \(summary.status)\n\(summary.pretty)")

        try await postRoomVersion()
    }

    /// opened → heartbeats with positions → markedAsRead → closed, over the last few minutes.
    func readingBatches() -> [[ReadingEventUploadItem]] {
        let start = Date().addingTimeInterval(-300)
        let offset = TimeZone.current.secondsFromGMT() / 60
        var sequence = 0
        func event(_ type: ReadingEventType, page: Int?, seconds: Int, at minute: Double) -> ReadingEventUploadItem {
            sequence += 1
            return ReadingEventUploadItem(
                eventId: UUID().uuidString.lowercased(), clientSessionId: sessionID, readingTargetType: .knowledgeSource,
                materialId: materialID, knowledgeBaseId: "demo-kb", eventType: type, position: page.map { .page($0, of: 20) },
                activeSecondsDelta: seconds, clientTimestamp: start.addingTimeInterval(minute * 60),
                clientTimezoneOffsetMinutes: offset, sequence: sequence, platform: "ios", appVersion: "backbone-demo")
        }
        return [
            [event(.opened, page: 1, seconds: 0, at: 0), event(.heartbeat, page: 3, seconds: 30, at: 0.5),
             event(.heartbeat, page: 6, seconds: 30, at: 1)],
            [event(.heartbeat, page: 11, seconds: 30, at: 1.5), event(.positionChanged, page: 15, seconds: 25, at: 2)],
            [event(.heartbeat, page: 20, seconds: 30, at: 2.5), event(.markedAsRead, page: 20, seconds: 5, at: 2.6),
             event(.closed, page: 20, seconds: 0, at: 2.7)],
        ]
    }

    func post(_ events: [ReadingEventUploadItem], label: String) async throws {
        let body = try ContractCoding.encode(ReadingEventBatchRequest(events: events))
        let response = try await expect(200, "POST", service: "ingest", base: endpoints.ingest,
                                        path: "/learning/reading-events/batch", token: userToken, body: body)
        say("\n== POST /learning/reading-events/batch, \(label) → \(response.status)")
        guard let decoded = try? ContractCoding.decode(ReadingEventBatchResponse.self, from: Array(response.body)) else {
            say(response.pretty)
            return
        }
        for (event, result) in zip(events, decoded.results) {
            let detail = [result.code?.rawValue, result.message].compactMap { $0 }.joined(separator: " ")
            say("  \(event.eventType.rawValue.padding(toLength: 15, withPad: " ", startingAt: 0)) \(result.status.rawValue)"
                + (detail.isEmpty ? "" : "  (\(detail))"))
        }
        say("  accepted \(decoded.accepted), duplicates \(decoded.duplicates), rejected \(decoded.rejected)")
    }

    /// Polls until the projector shows `status` at `percent` (the events went through Kafka).
    func waitForProgress(status wanted: String, percent: Double) async throws -> DemoHTTPClient.Response {
        let path = "/materials/\(materialID)/reading-progress"
        return try await poll(what: "reading progress to show \(wanted) at \(percent)%") {
            let response = try await http.send("GET", service: "progress-projector", base: endpoints.progress, path: path, token: userToken)
            let progress = try? ContractCoding.decode(ReadingProgressResponse.self, from: Array(response.body))
            let matches = progress.map { $0.status.rawValue == wanted && $0.progressPercent == percent } ?? false
            return response.status == 200 && matches ? response : nil
        }
    }

    /// Polls until the aggregator has counted the session's active time.
    func waitForSummary() async throws -> DemoHTTPClient.Response {
        try await poll(what: "the learning summary to count the session") {
            let response = try await http.send("GET", service: "analytics-aggregator", base: endpoints.analytics,
                                               path: "/learning/summary", token: userToken)
            let summary = try? ContractCoding.decode(LearningSummaryResponse.self, from: Array(response.body))
            return response.status == 200 && (summary?.materialsCompleted ?? 0) > 0 ? response : nil
        }
    }

    /// The three-step upload: upload-init, both objects PUT to their presigned URLs, upload-complete.
    func postRoomVersion() async throws {
        let usdz: Data
        let roomplan: Data
        do {
            usdz = try Data(contentsOf: URL(fileURLWithPath: scan.package))
            roomplan = try Data(contentsOf: URL(fileURLWithPath: scan.roomplan))
        } catch {
            throw CommandError(code: .io, message: "cannot read the scan \(scan.package) and \(scan.roomplan) (pass --scan FILE.usdz --roomplan FILE.json)",
                               context: "demo")
        }
        let initRequest = RoomUploadInitRequest(title: "Demo living room", tags: ["demo", "living room"], visibility: .private,
                                                usdzBytes: Int64(usdz.count), roomplanJsonBytes: Int64(roomplan.count))
        let created = try await expect(201, "POST", service: "ingest", base: endpoints.ingest, path: "/rooms/uploads",
                                       token: userToken, body: try ContractCoding.encode(initRequest))
        let upload = try ContractCoding.decode(RoomUploadInitResponse.self, from: Array(created.body))
        say("\n== POST /rooms/uploads → \(created.status) (room \(upload.roomId), version \(upload.versionId))")
        for (object, bytes) in [(upload.usdz, usdz), (upload.roomplanJson, roomplan)] {
            guard let url = object.url else {
                throw CommandError(code: .unexpectedResponse, message: "no single PUT URL for \(object.key)", context: "ingest")
            }
            let put = try await http.send("PUT", service: "object store", url: url, body: bytes)
            guard put.status == 200 else {
                throw CommandError(code: .unexpectedResponse, message: "PUT \(object.key) answered \(put.status): \(put.text)",
                                   context: "object store")
            }
            say("== PUT \(object.key) (\(bytes.count) bytes, presigned) → \(put.status)")
        }
        let request = RoomVersionCompleteRequest(
            roomId: upload.roomId, versionId: upload.versionId, title: initRequest.title, tags: initRequest.tags,
            visibility: initRequest.visibility,
            source: RoomSource(usdzKey: upload.usdz.key, usdzBytes: upload.usdz.bytes, roomplanJsonKey: upload.roomplanJson.key,
                               roomplanJsonBytes: upload.roomplanJson.bytes),
            redactions: [Redaction(textureRef: "textures/wall_0.png", kind: .face,
                                   region: RedactionRegion(x: 0.4, y: 0.2, width: 0.1, height: 0.15), method: "blur")],
            scan: ScanSummary(durationSeconds: 300))
        let response = try await expect(202, "POST", service: "ingest", base: endpoints.ingest, path: "/rooms/versions",
                                        token: userToken, body: try ContractCoding.encode(request))
        say("== POST /rooms/versions (room \(upload.roomId)) → \(response.status)\n\(response.pretty)")
        try await followTranscode(upload.versionId)
    }

    /// Follows the version through the transcode worker with the catch-up query until it is
    /// ready (or failed), printing each stage as it is seen, then the grade and the outputs.
    func followTranscode(_ versionID: String) async throws {
        var seen: [String] = []
        let final = try await poll(what: "the transcode worker to finish version \(versionID)", timeout: .seconds(90)) {
            let response = try await http.send("GET", service: "transcode-worker", base: endpoints.transcode,
                                               path: "/rooms/versions/\(versionID)", token: userToken)
            guard response.status == 200, let details = try? ContractCoding.decode(RoomVersionDetails.self, from: Array(response.body))
            else { return nil }
            let step = details.stage.map { "\(details.status.rawValue) (\($0))" } ?? details.status.rawValue
            if seen.last != step {
                seen.append(step)
                say("== transcode: \(step)")
            }
            return details.status == .ready || details.status == .failed ? response : nil
        }
        let details = try ContractCoding.decode(RoomVersionDetails.self, from: Array(final.body))
        say("\n== GET /rooms/versions/\(versionID) → \(final.status)\n\(final.pretty)")
        if details.status == .ready, let outputs = details.outputs {
            say("== grade \(details.qualityGrade ?? "?"), layers \(outputs.layers.keys.sorted().joined(separator: ", "))")
        }
    }

    func expect(_ status: Int, _ method: String, service: String, base: String, path: String, token: String?,
                body: [UInt8]? = nil) async throws -> DemoHTTPClient.Response {
        let response = try await http.send(method, service: service, base: base, path: path, token: token, body: body.map { Data($0) })
        guard response.status == status else {
            throw CommandError(code: .unexpectedResponse, message: "\(method) \(path) answered \(response.status), expected \(status): \(response.text)",
                               context: "\(service) at \(base)")
        }
        return response
    }

    func poll(what: String, timeout: Duration = .seconds(30),
              _ attempt: () async throws -> DemoHTTPClient.Response?) async throws -> DemoHTTPClient.Response {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let response = try await attempt() { return response }
            try await Task.sleep(for: .milliseconds(250))
        }
        throw CommandError(code: .timedOut, message: "waited \(timeout) for \(what)", context: "demo", isRetriable: true)
    }

    func say(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}
