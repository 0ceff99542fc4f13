import Auth
import Contracts
import Foundation
import JSON
import RealtimeNotifier
import ServiceLogging

/// One run of the demo: a user, a material, a reading session, a room version.
package struct DemoSession {
    let endpoints: DemoCommand.Endpoints
    let scan: DemoCommand.Scan
    let codec: JWTCodec
    let user: String
    let logger: Logger
    let http = DemoHTTPClient()
    let materialID = UUID().uuidString.lowercased()
    let sessionID = UUID().uuidString.lowercased()

    package init(endpoints: DemoCommand.Endpoints, scan: DemoCommand.Scan, codec: JWTCodec, user: String, logger: Logger) {
        self.endpoints = endpoints
        self.scan = scan
        self.codec = codec
        self.user = user
        self.logger = logger
    }

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

    /// The scan's two files.
    package func readScan() throws -> (usdz: Data, roomplan: Data) {
        do {
            return (try Data(contentsOf: URL(fileURLWithPath: scan.package)), try Data(contentsOf: URL(fileURLWithPath: scan.roomplan)))
        } catch {
            throw CommandError(code: .io, message: "cannot read the scan \(scan.package) and \(scan.roomplan) (pass --scan FILE.usdz --roomplan FILE.json)",
                               context: "demo")
        }
    }

    /// The first two steps of the upload: upload-init, then both objects PUT to their presigned
    /// URLs. Returns the upload-complete request to send (with a face redaction and a 5-minute scan).
    package func uploadScan(_ files: (usdz: Data, roomplan: Data), quiet: Bool = false) async throws -> RoomVersionCompleteRequest {
        let initRequest = RoomUploadInitRequest(title: "Demo living room", tags: ["demo", "living room"], visibility: .private,
                                                usdzBytes: Int64(files.usdz.count), roomplanJsonBytes: Int64(files.roomplan.count))
        let created = try await expect(201, "POST", service: "ingest", base: endpoints.ingest, path: "/rooms/uploads",
                                       token: userToken, body: try ContractCoding.encode(initRequest))
        let upload = try ContractCoding.decode(RoomUploadInitResponse.self, from: Array(created.body))
        if !quiet { say("\n== POST /rooms/uploads → \(created.status) (room \(upload.roomId), version \(upload.versionId))") }
        for (object, bytes) in [(upload.usdz, files.usdz), (upload.roomplanJson, files.roomplan)] {
            guard let url = object.url else {
                throw CommandError(code: .unexpectedResponse, message: "no single PUT URL for \(object.key)", context: "ingest")
            }
            let put = try await http.send("PUT", service: "object store", url: url, body: bytes)
            guard put.status == 200 else {
                throw CommandError(code: .unexpectedResponse, message: "PUT \(object.key) answered \(put.status): \(put.text)",
                                   context: "object store")
            }
            if !quiet { say("== PUT \(object.key) (\(bytes.count) bytes, presigned) → \(put.status)") }
        }
        return RoomVersionCompleteRequest(
            roomId: upload.roomId, versionId: upload.versionId, title: initRequest.title, tags: initRequest.tags,
            visibility: initRequest.visibility,
            source: RoomSource(usdzKey: upload.usdz.key, usdzBytes: upload.usdz.bytes, roomplanJsonKey: upload.roomplanJson.key,
                               roomplanJsonBytes: upload.roomplanJson.bytes),
            redactions: [Redaction(textureRef: "textures/wall_0.png", kind: .face,
                                   region: RedactionRegion(x: 0.4, y: 0.2, width: 0.1, height: 0.15), method: "blur")],
            scan: ScanSummary(durationSeconds: 300))
    }

    /// The last step: upload-complete, answered 202 once the transcode request is on its topic.
    package func completeUpload(_ request: RoomVersionCompleteRequest) async throws -> DemoHTTPClient.Response {
        try await expect(202, "POST", service: "ingest", base: endpoints.ingest, path: "/rooms/versions",
                         token: userToken, body: try ContractCoding.encode(request))
    }

    /// The realtime socket, authenticated as the user.
    package func openRealtime() async throws -> RealtimeClient {
        do {
            return try await RealtimeClient.connect(to: endpoints.realtime, token: userToken, logger: logger)
        } catch {
            throw CommandError(code: .serviceUnavailable, message: "cannot open the realtime WebSocket: \(error) — is it running? (start it with `backbone dev`)",
                               context: "realtime-notifier at \(endpoints.realtime)", isRetriable: true)
        }
    }

    /// The three-step upload (upload-init, both objects PUT to their presigned URLs,
    /// upload-complete), then the room followed over the realtime WebSocket to ready.
    func postRoomVersion() async throws {
        let request = try await uploadScan(try readScan())
        let upload = (roomId: request.roomId, versionId: request.versionId)
        // The room screen's socket is open before upload-complete; the room channel can be
        // joined once the notifier knows the room (it learns it from the upload-complete).
        let realtime = try await openRealtime()
        say("== realtime: WebSocket open to \(endpoints.realtime) (user \(user))")
        do {
            let response = try await completeUpload(request)
            say("== POST /rooms/versions (room \(upload.roomId)) → \(response.status)\n\(response.pretty)")
            try await followTranscode(room: upload.roomId, version: upload.versionId, realtime: realtime)
        } catch {
            await realtime.close()
            throw error
        }
        await realtime.close()
    }

    /// Joins `room:{roomId}` from the channel's first event (so nothing published before the
    /// join is missed), prints each `transcode_progress` stage and then `ready` (or `failed`)
    /// as they arrive on the WebSocket, then the catch-up query's grade and output URLs.
    func followTranscode(room roomID: String, version versionID: String, realtime: RealtimeClient) async throws {
        let topic = "room:\(roomID)"
        try await joinWhenKnown(topic, realtime: realtime)
        say("== realtime: joined \(topic) (from its first event)")
        let last = try await withThrowingTaskGroup(of: RealtimeClient.Broadcast?.self) { group in
            group.addTask {
                for await event in realtime.events {
                    switch event {
                    case .broadcast(let broadcast) where broadcast.channel == topic:
                        say(describe(broadcast))
                        if broadcast.event == "ready" || broadcast.event == "failed" { return broadcast }
                    case .system(let channel, let status, let message):
                        say("== realtime: \(channel) system \(status): \(message)")
                    case .closed(let channel) where channel == topic:
                        return nil
                    default:
                        break
                    }
                }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: .seconds(120))
                throw CommandError(code: .timedOut, message: "waited 120 s for ready or failed on \(topic)", context: "demo", isRetriable: true)
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let last else {
            throw CommandError(code: .unexpectedResponse, message: "the realtime channel \(topic) ended before ready or failed",
                               context: "realtime-notifier at \(endpoints.realtime)")
        }
        if last.event == "ready", last.payload["version_id"]?.stringValue != versionID {
            throw CommandError(code: .unexpectedResponse, message: "ready names version \(last.payload["version_id"]?.stringValue ?? "none"), expected \(versionID)",
                               context: "realtime-notifier at \(endpoints.realtime)")
        }
        let final = try await expect(200, "GET", service: "transcode-worker", base: endpoints.transcode,
                                     path: "/rooms/versions/\(versionID)", token: userToken)
        let details = try ContractCoding.decode(RoomVersionDetails.self, from: Array(final.body))
        say("\n== GET /rooms/versions/\(versionID) (the catch-up query) → \(final.status): \(details.status.rawValue), "
            + "attempts \(details.attempts)")
        if details.status == .ready, let outputs = details.outputs {
            say("== grade \(details.qualityGrade ?? "?"), layers \(outputs.layers.keys.sorted().joined(separator: ", "))")
            var files = [("layer_manifest.json", outputs.manifest), ("thumbnail.png", outputs.thumbnailPng),
                         ("thumbnail.webp", outputs.thumbnailWebp)]
            files += outputs.layers.sorted { $0.key < $1.key }.map { ("layers/\($0.key).glb", $0.value) }
            let width = files.map(\.0.count).max() ?? 0
            say("== outputs (presigned GET URLs, valid until \(ContractCoding.formatTimestamp(outputs.expiresAt))):")
            for (name, url) in files { say("   \(name.padding(toLength: width, withPad: " ", startingAt: 0))  \(url)") }
        } else if details.status == .failed {
            say("== failed: \(details.error?.code.rawValue ?? "?") \(details.error?.reason ?? "")")
        }
    }

    /// The room is unknown to the notifier until it has read the upload-complete's request
    /// (milliseconds after the 202): a refusal for that reason is retried for up to 30 s.
    func joinWhenKnown(_ topic: String, realtime: RealtimeClient) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            do {
                try await realtime.join(topic, replay: .afterSeq(0))
                return
            } catch let error as RealtimeClient.ClientError where error.isRetriable && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            } catch {
                throw CommandError(code: .unexpectedResponse, message: "\(error)", context: "realtime-notifier at \(endpoints.realtime)")
            }
        }
    }

    /// `== room:… transcode_progress transcoding (parsing)  #4` — one line per channel event.
    func describe(_ broadcast: RealtimeClient.Broadcast) -> String {
        let payload = broadcast.payload
        var detail: String
        switch broadcast.event {
        case "transcode_progress":
            detail = payload["status"]?.stringValue ?? "?"
            if let stage = payload["stage"]?.stringValue { detail += " (\(stage))" }
        case "ready":
            detail = "version_id \(payload["version_id"]?.stringValue ?? "?")"
            if let grade = payload["qualityGrade"]?.stringValue ?? payload["quality_grade"]?.stringValue { detail += ", grade \(grade)" }
        case "failed":
            detail = "\(payload["error"]?.stringValue ?? "?"): \(payload["reason"]?.stringValue ?? "")"
        default:
            detail = PhoenixMessage(topic: broadcast.channel, event: broadcast.event, payload: payload).encode(.v1)
        }
        let seq = broadcast.seq.map { "  #\($0)" } ?? ""
        return "== \(broadcast.channel) \(broadcast.event) \(detail)\(seq)\(broadcast.replayed ? " (replayed)" : "")"
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
