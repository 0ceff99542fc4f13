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

    @Test("Flow A with the seed's calls only: quota → upload-init → room:{id} joined at once, catch-up `uploading` → PUT → upload-complete → queued, stages, ready with the version_id → the room in the feed; a browser's preflight is answered; Ctrl-C stops nginx too")
    func flowAThroughOneOrigin() async throws {
        let offset = Integration.freePortOffset(for: DevStack.ports)
        let dev = try await DevStack.start(["--port-offset", String(offset)])
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

        let token = JWTCodec(secret: try #require(dev.value("JWT_SECRET"))).issue(userID: "one-origin-owner", ttl: 600)
        let fixtures = Integration.packageRoot.appendingPathComponent("Tests/USDTests/Fixtures")
        let script = Self.clients.appendingPathComponent("app_flow.py").path
        let python = ProcessInfo.processInfo.environment["PYTHON"] ?? "python3"
        let arguments = [script, base, token, fixtures.appendingPathComponent("roomscan.usdz").path,
                         fixtures.appendingPathComponent("roomscan.roomplan.json").path]
        let (status, output) = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try Integration.run(python, arguments) }) }
        }
        #expect(status == 0, "\(output)\n\(dev.log.suffix(3000))")
        let seen = (try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? [String: Any] ?? [:]
        let version = try #require(seen["version_id"] as? String, "\(output)")
        let room = try #require(seen["room_id"] as? String)
        #expect(seen["joined_before_complete"] as? Bool == true)
        #expect((seen["catch_up_before"] as? [[String: Any]])?.first?["status"] as? String == "uploading")
        #expect((seen["complete"] as? [String: Any])?["status"] as? String == "queued")
        let events = seen["events"] as? [[String: Any]] ?? []
        let statuses = events.compactMap { $0["status"] as? String }
        #expect(statuses.first == "queued" && statuses.contains("transcoding") && statuses.last == "ready", "\(events)")
        #expect(events.allSatisfy { $0["version_id"] as? String == version }, "\(events)")
        #expect((seen["catch_up_after"] as? [[String: Any]])?.first?["status"] as? String == "ready")
        #expect((seen["feed"] as? [[String: Any]])?.contains { $0["id"] as? String == room } == true, "\(seen["feed"] ?? "")")

        let exit = await dev.interrupt()
        #expect(exit == 0, "\(dev.log.suffix(2000))")
        #expect(DevStack.processes(mentioning: dev.home).isEmpty, "nothing of the folder runs: \(DevStack.processes(mentioning: dev.home))")
    }
}
