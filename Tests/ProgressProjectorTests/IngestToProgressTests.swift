import Auth
import BackboneTestSupport
import Contracts
import Foundation
import HTTPRouting
import Ingest
import JSON
import Kafka
import Postgres
import ProgressProjector
import Projection
import ServiceLogging
import ServiceRuntime
import Testing

@Suite("Ingest to progress, end to end", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(3)))
struct IngestToProgressTests {
    @Test("a batch POSTed to ingest is reflected by GET reading-progress; a resend changes nothing")
    func postThenGet() async throws {
        try await Self.withPipeline("e2e_progress") { ingest, progress, codec in
            let service = codec.issue(userID: "catalog", role: "service")
            let put = await ingest.respond(to: request(.put, "/materials/lesson-42", token: service,
                                                       body: #"{"readingTargetType":"knowledgeSource","knowledgeBaseId":"kb-1"}"#))
            #expect(put.status == .ok || put.status == .created)

            let alice = codec.issue(userID: "alice")
            let now = Date()
            let items = (1...3).map { n in
                ReadingEventUploadItem(eventId: UUID().uuidString, clientSessionId: "s-1", readingTargetType: .knowledgeSource,
                                       materialId: "lesson-42", knowledgeBaseId: "kb-1", eventType: .heartbeat,
                                       position: .page(n * 3, of: 12), activeSecondsDelta: 15,
                                       clientTimestamp: now.addingTimeInterval(Double(n)), clientTimezoneOffsetMinutes: 480,
                                       sequence: n, platform: "iOS", appVersion: "2.3.0")
        }
        let body = String(decoding: try ContractCoding.encode(ReadingEventBatchRequest(events: items)), as: UTF8.self)
        let posted = await ingest.respond(to: request(.post, "/learning/reading-events/batch", token: alice, body: body))
        #expect(posted.status == .ok)
        #expect(try ContractCoding.decode(ReadingEventBatchResponse.self, from: posted.body).accepted == 3)

        let router = progress
        var reflected: ReadingProgressResponse?
        let seen = await Integration.eventually(timeout: .seconds(30)) {
            let response = await router.respond(to: request(.get, "/materials/lesson-42/reading-progress", token: alice))
            reflected = try? ContractCoding.decode(ReadingProgressResponse.self, from: response.body)
            return reflected?.totalActiveSeconds == 45
        }
        #expect(seen)
        #expect(reflected?.status == .inProgress)
        #expect(reflected?.lastPosition == .page(9, of: 12))
        #expect(reflected?.progressPercent == 75)

        // The client timed out and resends the whole batch: answered duplicate, counted once.
        let resent = await ingest.respond(to: request(.post, "/learning/reading-events/batch", token: alice, body: body))
        #expect(try ContractCoding.decode(ReadingEventBatchResponse.self, from: resent.body).duplicates == 3)
        try await Task.sleep(for: .seconds(1))
        let after = await router.respond(to: request(.get, "/materials/lesson-42/reading-progress", token: alice))
        #expect(try ContractCoding.decode(ReadingProgressResponse.self, from: after.body).totalActiveSeconds == 45)

        // Bob has read nothing of it.
        let bob = await router.respond(to: request(.get, "/materials/lesson-42/reading-progress", token: codec.issue(userID: "bob")))
        #expect(try ContractCoding.decode(ReadingProgressResponse.self, from: bob.body).status == .notStarted)
        }
    }
    @Test("positions of any shape round-trip: posted through ingest, given back equal in lastPosition; the percent from the keys it knows, else the last known one")
    func positionsRoundTrip() async throws {
        try await Self.withPipeline("e2e_positions") { ingest, progress, codec in
            let service = codec.issue(userID: "catalog", role: "service")
            let user = codec.issue(userID: "reader")
            let router = progress
            // Each shape, on a material of its own, as the app's JSON: then read back.
            let shapes: [(material: String, position: String, percent: Double)] = [
                ("epub", #"{"page":3,"totalPages":10,"chapterId":"c2","cfi":"epubcfi(/6/4!/4/2)"}"#, 30),
                ("novel", #"{"chapter":3,"offset":0.42}"#, 0),
                ("pdf", #"{"pdfPage":5,"zoom":1.5,"x":10,"y":20}"#, 0),
                ("nested", #"{"progress":0.25,"loc":{"章":"第三章","path":[1,true,null,{"k":"ü"}]},"anchor":"p-7"}"#, 25),
            ]
            var sequence = 0
            func post(_ material: String, _ position: String) async -> HTTPResponse {
                sequence += 1
                let event = """
                    {"events":[{"eventId":"\(UUID().uuidString)","clientSessionId":"s-1","readingTargetType":"knowledgeSource",
                    "materialId":"\(material)","eventType":"positionChanged","position":\(position),"activeSecondsDelta":5,
                    "clientTimestamp":"\(ContractCoding.formatTimestamp(Date().addingTimeInterval(Double(sequence) / 1000)))",
                    "timezoneOffsetMinutes":480,"sequence":\(sequence),"platform":"iOS","appVersion":"2.3.0"}]}
                    """
                return await ingest.respond(to: request(.post, "/learning/reading-events/batch", token: user, body: event))
        }
        func read(_ material: String) async -> JSONValue? {
            let response = await router.respond(to: request(.get, "/materials/\(material)/reading-progress", token: user))
            return try? ContractCoding.decoder.decode(JSONValue.self, from: Data(response.body))
        }
        for shape in shapes {
            _ = await ingest.respond(to: request(.put, "/materials/\(shape.material)", token: service,
                                                 body: #"{"readingTargetType":"knowledgeSource"}"#))
            let posted = await post(shape.material, shape.position)
            #expect(try ContractCoding.decode(ReadingEventBatchResponse.self, from: posted.body).accepted == 1,
                    "\(String(decoding: posted.body, as: UTF8.self))")
        }
        for shape in shapes {
            let sent = try ContractCoding.decoder.decode(JSONValue.self, from: Data(shape.position.utf8))
            var back: JSONValue?
            let seen = await Integration.eventually(timeout: .seconds(30)) {
                back = await read(shape.material)
                return back?["lastPosition"] == sent
            }
            #expect(seen, "\(shape.material): sent \(shape.position), read \(String(describing: back))")
            #expect(back?["progressPercent"]?.numberValue == shape.percent, "\(shape.material)")
        }
        // A position the percent cannot come from keeps the last known percent.
        _ = await post("epub", #"{"chapterId":"c3","cfi":"epubcfi(/6/6)"}"#)
        var after: JSONValue?
        let moved = await Integration.eventually(timeout: .seconds(30)) {
            after = await read("epub")
            return after?["lastPosition"]?["chapterId"]?.stringValue == "c3"
        }
        #expect(moved && after?["progressPercent"]?.numberValue == 30, "\(String(describing: after))")
        // Over the bounds, or not an object: rejected, nothing stored.
        let big = await post("pdf", #"{"notes":"\#(String(repeating: "x", count: 5000))"}"#)
        #expect(try ContractCoding.decode(ReadingEventBatchResponse.self, from: big.body).results.first?.code == .invalidPosition)
        let scalar = await post("pdf", "42")
        #expect(try ContractCoding.decode(ReadingEventBatchResponse.self, from: scalar.body).results.first?.code == .invalidPosition)
        }
    }

    /// Ingest and the progress projector over one database and broker; `body` gets ingest's
    /// router, the projector's and the token codec.
    static func withPipeline(_ prefix: String, _ body: (Router, Router, JWTCodec) async throws -> Void) async throws {
        let harness = try await ProgressHarness(databasePrefix: prefix)
        try harness.createTopics([Topics.readingEvents, Topics.readingProgress])
        _ = try await PostgresMigrator(migrations: IngestSchema.migrations + ProgressProjectorService.migrations, logger: .disabled)
            .migrate(harness.client)
        let context = harness.context()
        let ingest = IngestService(context: context, configuration: IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000))
            .parts().router
        let progress = ProgressProjectorService(context: context)
        let runner = progress.makeRunner()
        let consuming = Task { try await runner.run() }
        var failure: (any Error)?
        do { try await body(ingest, progress.router(), context.authenticator.codec) } catch { failure = error }
        consuming.cancel()
        _ = await consuming.result
        await harness.close()
        if let failure { throw failure }
    }
}

/// A request as the apps send it: a bearer token, a JSON body.
func request(_ method: HTTPMethod, _ path: String, token: String, body: String = "") -> HTTPRequest {
    HTTPRequest(method: method, path: path, headers: ["Authorization": "Bearer " + token], body: Array(body.utf8))
}
