import Auth
import BackboneTestSupport
import Foundation
import Testing

/// The CrowdRoom app pointed at `backbone dev`'s one origin (`APP_BASE_URL`, nginx with compose's
/// gateway configuration), calling only what the seed's app calls, through Supabase's own
/// Python clients: functions, Realtime, PostgREST.
@Suite("The app through backbone dev's one origin", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(5)))
struct AppThroughOneOriginTests {
    static let clients = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Clients")

    /// Ingest's multipart threshold in this test: its smallest setting (one S3 part), so that a
    /// scan just over it — 5 MiB and a bit, made in a moment — goes up in parts.
    static let multipartThreshold = 5 << 20

    @Test("Flow A with the seed's calls only, set up as the app's Supabase client is (anon key as apikey, the session as bearer and through set_auth on the socket), for a scan PUT whole and one PUT in parts: quota → upload-init → room:{id} joined at once, catch-up `uploading` → PUT → upload-complete → queued, stages, ready with the version_id → GET /rooms/versions/{id} ready → both rooms in the seed's feed query; a browser's preflight is answered; Ctrl-C stops nginx too")
    func flowAThroughOneOrigin() async throws {
        let offset = Integration.freePortOffset(for: DevStack.ports)
        let dev = try await DevStack.start(["--port-offset", String(offset)],
                                           environment: ["INGEST_MULTIPART_THRESHOLD_BYTES": String(Self.multipartThreshold)])
        defer { dev.cleanUp() }
        let base = try #require(dev.value("APP_BASE_URL"), "dev.env names the one origin\n\(dev.log)")
        #expect(base == "http://127.0.0.1:\(8000 + offset)")
        #expect(dev.log.contains("APP_BASE_URL"), "the banner shows the app's base URL")

        // A browser app on another origin (the web remix editor) may call the functions.
        let preflight = try await CLIProcess.shell(
            "curl -s -o /dev/null -w '%{http_code} %header{access-control-allow-origin}' -X OPTIONS "
                + "-H 'Origin: http://localhost:5173' -H 'Access-Control-Request-Method: POST' "
                + "-H 'Access-Control-Request-Headers: authorization, apikey, x-client-info, content-type' \(base)/functions/v1/upload-init")
        #expect(preflight.output == "204 *", "\(preflight.output)")

        // The project's keys as Supabase makes its legacy ones: the anon key and a user's session,
        // both HS256 with the project's JWT secret.
        let codec = JWTCodec(secret: try #require(dev.value("JWT_SECRET")))
        let anonKey = codec.sign(JWTClaims(sub: "", exp: Int64(Date().timeIntervalSince1970) + 3600, role: "anon"))
        let session = codec.issue(userID: "one-origin-owner", ttl: 600)
        let fixtures = Integration.packageRoot.appendingPathComponent("Tests/USDTests/Fixtures")
        let script = Self.clients.appendingPathComponent("app_flow.py").path
        let python = ProcessInfo.processInfo.environment["PYTHON"] ?? "python3"
        let arguments = [script, base, anonKey, session, fixtures.appendingPathComponent("roomscan.usdz").path,
                         fixtures.appendingPathComponent("roomscan.roomplan.json").path, String(Self.multipartThreshold + (1 << 20))]
        let (status, output) = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try Integration.run(python, arguments) }) }
        }
        #expect(status == 0, "\(output)\n\(dev.log.suffix(3000))")
        let seen = (try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? [String: Any] ?? [:]
        var rooms: [String] = []
        for label in ["single", "multipart"] {
            let flow = try #require(seen[label] as? [String: Any], "\(label): \(output)")
            let version = try #require(flow["version_id"] as? String, "\(label): \(flow)")
            rooms.append(try #require(flow["room_id"] as? String))
            #expect(flow["joined_before_complete"] as? Bool == true, "\(label): \(flow)")
            // backbone dev announced itself with every consumer group formed: the room's
            // announcement is read at once, and the first join is not refused.
            #expect(flow["join_error"] == nil, "\(label): \(flow)")
            #expect((flow["catch_up_before"] as? [[String: Any]])?.first?["status"] as? String == "uploading", "\(label): \(flow)")
            #expect((flow["complete"] as? [String: Any])?["status"] as? String == "queued", "\(label): \(flow)")
            let events = flow["events"] as? [[String: Any]] ?? []
            let statuses = events.compactMap { $0["status"] as? String }
            #expect(statuses.first == "queued" && statuses.contains("transcoding") && statuses.last == "ready", "\(label): \(events)")
            #expect(events.allSatisfy { $0["version_id"] as? String == version }, "\(label): \(events)")
            #expect((flow["catch_up_after"] as? [[String: Any]])?.first?["status"] as? String == "ready", "\(label): \(flow)")
            let details = flow["details"] as? [String: Any]
            #expect(details?["status"] as? String == "ready" && details?["manifest"] as? Bool == true, "\(label): \(flow)")
        }
        let multipart = try #require(seen["multipart"] as? [String: Any])
        #expect((seen["large_bytes"] as? Int ?? 0) > Self.multipartThreshold)
        #expect(multipart["parts"] as? [Int] == [5 << 20, (seen["large_bytes"] as? Int ?? 0) - (5 << 20)], "\(multipart)")
        #expect(multipart["parts_cover_the_file"] as? Bool == true)
        #expect((seen["single"] as? [String: Any])?["parts"] == nil, "a small scan goes up in one PUT")
        let feed = seen["feed"] as? [String] ?? []
        #expect(rooms.allSatisfy(feed.contains), "\(feed) holds \(rooms)")

        let exit = await dev.interrupt()
        #expect(exit == 0, "\(dev.log.suffix(2000))")
        #expect(DevStack.processes(mentioning: dev.home).isEmpty, "nothing of the folder runs: \(DevStack.processes(mentioning: dev.home))")
    }
}
