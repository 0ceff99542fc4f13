import AnalyticsAggregator
import Auth
import Contracts
import Foundation
import HTTPRouting
import Postgres
import Projection
import ServiceRuntime

/// p50/p99 of each GET endpoint (through the service's router, database included) for a
/// user with 365 active days, against a bare `SELECT 1` through the same pool.
struct LatencyBench {
    let database: PostgresClient
    let iterations = 2000

    struct Result {
        var lines: [String]
        var report: String { (["GET latency, user with 365 active days (\(lines.count - 1) endpoints + baseline):"] + lines).joined(separator: "\n") }
    }

    func run() async throws -> Result {
        let user = "bench-year-user"
        let secret = "analytics-bench-secret-0123456789"
        let now = Date()
        try await fillYear(user: user, endingAt: now)
        let router = AnalyticsRoutes(readModel: AnalyticsReadModel(database: database), authenticator: RequestAuthenticator(secret: secret),
                                     clock: { now }).router()
        let token = JWTCodec(secret: secret).issue(userID: user, ttl: 86_400)
        var lines: [String] = []

        var baseline = LatencySample()
        for _ in 0..<iterations {
            let start = ContinuousClock.now
            _ = try await database.query("SELECT 1")
            baseline.add(ContinuousClock.now - start)
        }
        lines.append("  baseline SELECT 1                    " + baseline.summary)

        var cursor: String?
        for (path, query) in [("/learning/summary", [String: String]()), ("/learning/trend", ["days": "7"]),
                              ("/learning/trend", ["days": "90"]), ("/activity/heatmap", ["days": "365"]),
                              ("/learning/history", ["limit": "20"]), ("/learning/history", ["limit": "20", "cursor": "page2"])] {
            var sample = LatencySample()
            var query = query
            if query["cursor"] != nil { query["cursor"] = cursor }
            let request = HTTPRequest(method: .get, path: path, query: query, headers: ["Authorization": "Bearer \(token)"])
            for i in 0..<(iterations + 100) {
                let start = ContinuousClock.now
                let response = await router.respond(to: request)
                if i >= 100 { sample.add(ContinuousClock.now - start) }  // the first 100 warm up
                guard response.status == .ok else { fatalError("\(path) answered \(response.status)") }
                if path == "/learning/history", cursor == nil {
                    cursor = try ContractCoding.decode(LearningHistoryResponse.self, from: response.body).nextCursor
                }
            }
            let label = path + (query.isEmpty ? "" : "?" + query.keys.sorted().map { "\($0)=\($0 == "cursor" ? "…" : query[$0]!)" }.joined(separator: "&"))
            lines.append("  " + label.padding(toLength: 37, withPad: " ", startingAt: 0) + sample.summary)
        }
        return Result(lines: lines)
    }

    /// 365 consecutive local days with two sessions each (about 20 events a day).
    func fillYear(user: String, endingAt now: Date) async throws {
        var events: [ReadingEventRecord] = []
        var sequence = 0
        for day in 0..<365 {
            for session in 0..<2 {
                let start = now.addingTimeInterval(-Double(day) * 86_400 - Double(session) * 7200 - 3600)
                let id = "year-\(day)-\(session)"
                for step in 0..<10 {
                    sequence += 1
                    let type: ReadingEventType = step == 0 ? .opened : step == 9 ? .closed : .heartbeat
                    let item = ReadingEventUploadItem(
                        eventId: UUID().uuidString.lowercased(), clientSessionId: id, readingTargetType: .knowledgeSource,
                        materialId: "material-\(day % 40)", eventType: type, activeSecondsDelta: 20 + day % 90,
                        clientTimestamp: start.addingTimeInterval(Double(step) * 60), clientTimezoneOffsetMinutes: 0,
                        sequence: sequence, platform: "ios", appVersion: "1.0")
                    events.append(ReadingEventRecord(userId: user, receivedAt: start, item: item))
                }
            }
        }
        let projection = AnalyticsProjection()
        for chunk in stride(from: 0, to: events.count, by: 500) {
            let batch = events[chunk..<min(events.count, chunk + 500)].enumerated().map {
                ProjectedEvent(event: $0.element, topic: Topics.readingEvents, partition: 0, offset: Int64(chunk + $0.offset))
            }
            try await database.withTransaction { connection in try await projection.apply(batch, in: connection) }
        }
        _ = try await database.execute("ANALYZE")
    }
}
