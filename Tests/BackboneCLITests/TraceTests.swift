import Auth
import BackboneTestSupport
import Foundation
import Testing

/// One W3C trace id from the app's POST to every read model, as an operator follows it: in the
/// records of every topic the event reaches (`backbone dump --trace`) and in the log line of
/// every consumer that handled it.
@Suite("One trace id through the pipeline", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(4)))
struct TraceTests {
    @Test("a batch posted with a sampled traceparent: traceresponse names the trace; its records on reading.events.v2, reading.progress.v1 and realtime.sequenced.v1 carry it; ingest, the progress projector, the analytics aggregator, the realtime sequencer and the push each log it; tail --trace finds only them")
    func oneTraceThroughThePipeline() async throws {
        let offset = Integration.freePortOffset(for: DevStack.ports)
        let dev = try await DevStack.start(["--port-offset", String(offset)], environment: ["LOG_LEVEL": "info"])
        defer { dev.cleanUp() }
        let codec = JWTCodec(secret: try #require(dev.value("JWT_SECRET")))
        let user = codec.issue(userID: "traced-reader", ttl: 600)
        let service = codec.issue(userID: "catalog", ttl: 600, role: "service")
        let ingest = try #require(dev.value("INGEST_URL")), progress = try #require(dev.value("PROGRESS_URL"))

        let material = try await CLIProcess.shell("""
            curl -s -o /dev/null -w '%{http_code}' -X PUT '\(ingest)/materials/traced-lesson' -H 'Authorization: Bearer \(service)' \
              -d '{"readingTargetType":"knowledgeSource","knowledgeBaseId":"kb-1"}'
            """)
        #expect(material.output == "200", "\(material.output)")
        let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
        let now = ISO8601DateFormatter().string(from: Date())
        let batch = """
            {"events":[{"eventId":"\(UUID().uuidString)","clientSessionId":"s-1","readingTargetType":"knowledgeSource",
            "materialId":"traced-lesson","knowledgeBaseId":"kb-1","eventType":"positionChanged","position":{"page":3,"totalPages":12},
            "activeSecondsDelta":15,"clientTimestamp":"\(now)","clientTimezoneOffsetMinutes":480,"sequence":1,"platform":"iOS","appVersion":"2.3.0"}]}
            """
        let posted = try await CLIProcess.shell("""
            curl -s -D - -o /dev/null -X POST '\(ingest)/learning/reading-events/batch' -H 'Authorization: Bearer \(user)' \
              -H 'traceparent: 00-\(traceID)-00f067aa0ba902b7-01' --data-binary '\(batch.replacingOccurrences(of: "\n", with: ""))'
            """)
        #expect(posted.output.contains("200"), "\(posted.output)")
        let answered = posted.output.split(separator: "\r\n").first { $0.lowercased().hasPrefix("traceresponse:") }
        #expect(answered?.contains("00-\(traceID)-") == true && answered?.hasSuffix("-01") == true, "\(posted.output)")

        let projected = await Integration.eventually(timeout: .seconds(30)) {
            let answer = try? await CLIProcess.shell("curl -s '\(progress)/materials/traced-lesson/reading-progress' -H 'Authorization: Bearer \(user)'")
            return answer?.output.contains("\"page\":3") == true
        }
        #expect(projected, "the progress read model got the event")

        let environment = ["KAFKA_BROKERS": try #require(dev.value("KAFKA_BROKERS")), "DATABASE_URL": try #require(dev.value("DATABASE_URL"))]
        var topics: Set<String> = []
        let reached = await Integration.eventually(timeout: .seconds(30)) {
            guard let dump = try? await CLIProcess.run(["dump", "--trace", traceID], environment: environment) else { return false }
            topics = Set(dump.stdout.split(separator: "\n").compactMap { line in
                ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])?["topic"] as? String
            })
            return topics.isSuperset(of: ["reading.events.v2", "reading.progress.v1", "realtime.sequenced.v1"])
        }
        #expect(reached, "the trace's records: \(topics)")
        let tail = try await CLIProcess.run(["tail", "reading.events.v2", "--trace", "00-\(traceID)-00f067aa0ba902b7-01"], environment: environment)
        #expect(tail.stdout.split(separator: "\n").count == 1 && tail.stdout.contains("\"traceparent\":\"00-\(traceID)-"), "\(tail.stdout)")
        let other = try await CLIProcess.run(["tail", "reading.events.v2", "--trace", String(repeating: "ab", count: 16)], environment: environment)
        #expect(other.stdout.isEmpty)

        // The log lines of the trace, one per service that handled it.
        let logged = await Integration.eventually(timeout: .seconds(15)) {
            let lines = dev.log.split(separator: "\n").filter { $0.contains("\"trace_id\":\"\(traceID)\"") }
            let groups = Set(lines.compactMap { line in
                ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])?["projection.group"] as? String
            })
            return lines.contains { $0.contains("traced reading events answered") }
                && lines.contains { $0.contains("traced event pushed") }
                && groups.contains("progress-projector") && groups.contains { $0.contains("analytics") }
                && groups.contains { $0.contains("realtime") }
        }
        #expect(logged, "\(dev.log.split(separator: "\n").filter { $0.contains(traceID) }.joined(separator: "\n"))")
    }

    @Test("a room uploaded with a sampled traceparent through the app's functions: upload-init's announcement, the transcode request, every status and the pushed channel events carry it; ingest, the worker's job, the catalog, the realtime sequencer and the push each log it")
    func oneTraceThroughTheRoomPath() async throws {
        let offset = Integration.freePortOffset(for: DevStack.ports)
        let dev = try await DevStack.start(["--port-offset", String(offset)], environment: ["LOG_LEVEL": "info"])
        defer { dev.cleanUp() }
        let codec = JWTCodec(secret: try #require(dev.value("JWT_SECRET")))
        let user = codec.issue(userID: "traced-scanner", ttl: 600)
        let ingest = try #require(dev.value("INGEST_URL"))
        let fixtures = Integration.packageRoot.appendingPathComponent("Tests/USDTests/Fixtures")
        let usdz = fixtures.appendingPathComponent("roomscan.usdz").path, json = fixtures.appendingPathComponent("roomscan.roomplan.json").path
        let usdzBytes = try #require(try FileManager.default.attributesOfItem(atPath: usdz)[.size] as? Int)
        let traceID = "0af7651916cd43dd8448eb211c80319c"

        let initialized = try await CLIProcess.shell("""
            curl -s -X POST '\(ingest)/functions/v1/upload-init' -H 'Authorization: Bearer \(user)' \
              -H 'traceparent: 00-\(traceID)-b7ad6b7169203331-01' \
              -d '{"title":"traced room","tags":["study"],"visibility":"public","bytes_source":\(usdzBytes)}'
            """)
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(initialized.output.utf8)) as? [String: Any], "\(initialized.output)")
        let version = try #require(answer["version_id"] as? String, "\(initialized.output)")
        for (file, url) in [(usdz, answer["presigned_usdz"]), (json, answer["presigned_json"])] {
            let put = try await CLIProcess.shell("curl -s -o /dev/null -w '%{http_code}' -T '\(file)' '\(try #require(url as? String))'")
            #expect(put.output == "200", "PUT \(file): \(put.output)")
        }
        let completed = try await CLIProcess.shell("""
            curl -s -X POST '\(ingest)/functions/v1/upload-complete' -H 'Authorization: Bearer \(user)' \
              -H 'traceparent: 00-\(traceID)-b9c7c989f97918e1-01' -d '{"version_id":"\(version)","redactions":[]}'
            """)
        #expect(completed.output.contains("\"queued\""), "\(completed.output)")

        let environment = ["KAFKA_BROKERS": try #require(dev.value("KAFKA_BROKERS")), "DATABASE_URL": try #require(dev.value("DATABASE_URL"))]
        let topics = ["room.uploads.v1", "room.transcode.requests.v1", "room.transcode.status.v1", "realtime.sequenced.v1"]
        var statuses: Set<String> = [], reached: Set<String> = []
        let ready = await Integration.eventually(timeout: .seconds(90)) {
            guard let dump = try? await CLIProcess.run(["dump", "--trace", traceID], environment: environment) else { return false }
            let lines = dump.stdout.split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
            }
            reached = Set(lines.compactMap { $0["topic"] as? String })
            statuses = Set(lines.filter { $0["topic"] as? String == "room.transcode.status.v1" }.compactMap { line in
                ((line["value"] as? [String: Any])?["status"] as? String)
            })
            return reached.isSuperset(of: topics) && statuses.isSuperset(of: ["queued", "transcoding", "ready"])
        }
        #expect(ready, "the trace's records: \(reached), statuses \(statuses)")

        let logged = await Integration.eventually(timeout: .seconds(15)) {
            let lines = dev.log.split(separator: "\n").filter { $0.contains("\"trace_id\":\"\(traceID)\"") }
            let groups = Set(lines.compactMap { line in
                ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])?["projection.group"] as? String
            })
            return lines.contains { $0.contains("traced request answered") && $0.contains("upload-complete") }
                && lines.contains { $0.contains("room version ready") }
                && lines.contains { $0.contains("traced event pushed") }
                && groups.contains("room-catalog") && groups.contains { $0.contains("realtime") }
        }
        #expect(logged, "\(dev.log.split(separator: "\n").filter { $0.contains(traceID) }.joined(separator: "\n"))")
    }
}
