import AnalyticsAggregator
import Auth
import BackboneTestSupport
import Contracts
import Foundation
import HTTPRouting
import Postgres
import ServiceRuntime
import Testing

/// The heatmap's months (`ActivityMonths`) against the daily table they are kept from: the
/// arrays the batch statement keeps must be the arrays the daily table gives, and the heatmap
/// read from them must be byte for byte the heatmap of the daily rows.
@Suite("Analytics heatmap months (PostgreSQL)", .serialized, .timeLimit(.minutes(3)),
       .enabled(if: Integration.isEnabled, "needs BACKBONE_INTEGRATION=1 and TEST_DATABASE_URL"))
struct ActivityMonthsTests {
    @Test("the months kept batch by batch equal the daily table's, and the heatmap read from them is the daily rows' heatmap byte for byte")
    func keptMonthsMatchDailyTable() async throws {
        var random = SplitMix64(state: 20261207)
        let db = try await ScratchDatabase.create("activity_months")
        defer { Task { await db.drop() } }
        let factories = (0..<5).map { EventFactory(user: "months-\($0)", offsetMinutes: [-720, -300, 0, 330, 840][$0]) }
        var events: [ReadingEventRecord] = []
        for var factory in factories {
            // Fourteen months, from January 2025: month ends, a leap-free February, a year's turn.
            for day in 0..<425 where Int.random(in: 0..<10, using: &random) < 3 {
                for piece in 0..<Int.random(in: 1...3, using: &random) {
                    let at = factory.instant(2025, 1, 1, 2 + piece * 7).addingTimeInterval(Double(day) * 86_400)
                    events.append(factory.event(.heartbeat, at: at, seconds: Int.random(in: 0...900, using: &random),
                                                session: "s\(day)-\(piece)", material: "m\(piece)"))
                }
            }
        }
        var delivered = events + events.shuffled(using: &random).prefix(events.count / 4)
        delivered.shuffle(using: &random)
        try await db.apply(delivered, batchSize: 17)

        let kept = try await db.client.query(ActivityMonths.keptRows).map { try $0.decode(String.self, 0) }
        let fromDaily = try await db.client.query(ActivityMonths.fromDailyTable + " ORDER BY 1").map { try $0.decode(String.self, 0) }
        #expect(!kept.isEmpty)
        #expect(kept == fromDaily, "the months kept by the batches are the months the daily table gives")

        // The heatmap through the route against the body of the daily rows, for todays before,
        // inside and after the history, every `tz` and window lengths from one day to 366.
        let model = AnalyticsReadModel(database: db.client)
        let codec = JWTCodec(secret: TestSecrets.jwt)
        var compared = 0
        for factory in factories {
            for dayOffset in [-3, 0, 31, 58, 59, 200, 365, 424, 425, 500] {
                let now = factory.instant(2025, 1, 1, 12).addingTimeInterval(Double(dayOffset) * 86_400)
                let router = AnalyticsRoutes(readModel: model, authenticator: RequestAuthenticator(secret: TestSecrets.jwt),
                                             clock: { now }).router()
                for tz in [nil, -720, 0, 840] as [Int?] {
                    for count in [1, 7, 28, 365, 366] {
                        var query = ["days": String(count)]
                        if let tz { query["tz"] = String(tz) }
                        var headers = HTTPHeaders()
                        headers.add(name: "Authorization", value: "Bearer \(codec.issue(userID: factory.user))")
                        let response = await router.respond(to: HTTPRequest(method: .get, path: "/activity/heatmap", query: query,
                                                                             headers: headers))
                        #expect(response.status == .ok)
                        let daily = try await model.window(user: factory.user, count: count, now: now, offsetMinutes: tz)
                        #expect(response.body == HeatmapBody.json(daily.days, today: daily.today, count: count),
                                "\(factory.user), day \(dayOffset), tz \(String(describing: tz)), \(count) days")
                        compared += 1
                    }
                }
            }
        }
        #expect(compared == factories.count * 10 * 4 * 5)

        // A user with no event: a year of zeros, as before.
        let nobody = try await model.heatmapWindow(user: "nobody", count: 365, now: Date(), offsetMinutes: nil)
        #expect(nobody.days.isEmpty)

        // The migration's backfill gives the same rows.
        try await db.client.execute("DELETE FROM analytics_months")
        try await db.client.execute("INSERT INTO analytics_months (user_id, month, seconds) SELECT * FROM (\(ActivityMonths.fromDailySelect)) AS a")
        #expect(try await db.client.query(ActivityMonths.keptRows).map { try $0.decode(String.self, 0) } == kept)
    }
}
