import AnalyticsAggregator
import Auth
import BackboneTestSupport
import Contracts
import Foundation
import HTTPRouting
import Postgres
import ServiceRuntime
import Testing

/// The summary's row per user (`UserSummary`) against the tables it is kept from: the row the
/// batch statement keeps must be the row recomputed from the tables, and the summary read from
/// it must answer what the tables answer.
@Suite("Analytics summary row (PostgreSQL)", .serialized, .timeLimit(.minutes(3)),
       .enabled(if: Integration.isEnabled, "needs BACKBONE_INTEGRATION=1 and TEST_DATABASE_URL"))
struct UserSummaryTests {
    @Test("the summary row kept batch by batch equals the row recomputed from the tables, and the summary answers as the tables do")
    func keptRowMatchesTables() async throws {
        var random = SplitMix64(state: 20261206)
        let db = try await ScratchDatabase.create("user_summary")
        defer { Task { await db.drop() } }
        let factories = (0..<6).map { EventFactory(user: "summary-\($0)", offsetMinutes: [-720, -300, 0, 330, 480, 840][$0]) }
        var events: [ReadingEventRecord] = []
        for var factory in factories {
            for day in 1...30 where Int.random(in: 0..<10, using: &random) < 6 {
                for piece in 0..<Int.random(in: 1...4, using: &random) {
                    let at = factory.instant(2026, 5, 1, 6 + piece * 4).addingTimeInterval(Double(day - 1) * 86_400)
                    let material = "m\(Int.random(in: 0..<5, using: &random))"
                    let type: ReadingEventType = Int.random(in: 0..<6, using: &random) == 0 ? .markedAsRead : .heartbeat
                    events.append(factory.event(type, at: at, seconds: Int.random(in: 0...50, using: &random),
                                                         session: "d\(day)-\(piece)", material: material))
                }
            }
        }
        var delivered = events + events.shuffled(using: &random).prefix(events.count / 4)
        delivered.shuffle(using: &random)
        try await db.apply(delivered, batchSize: 13)
        let kept = try await rows(db)
        #expect(kept.count == factories.count)
        try await db.client.execute(UserSummary.recomputeAll)
        #expect(try await rows(db) == kept, "the row kept by the batches is the row recomputed from the tables")

        // The summary, for todays before, inside and after the history and a tz on either side
        // of the user's own, against the tables it used to be computed from.
        let model = AnalyticsReadModel(database: db.client)
        let routes = { (now: Date) in
            AnalyticsRoutes(readModel: model, authenticator: RequestAuthenticator(secret: TestSecrets.jwt), clock: { now }).router()
        }
        let codec = JWTCodec(secret: TestSecrets.jwt)
        var checked = 0
        for index in factories.indices {
            let user = factories[index].user
            for dayOfMay in [1, 2, 15, 29, 30, 31, 32, 45] {
                let now = factories[index].instant(2026, 5, 1, 12).addingTimeInterval(Double(dayOfMay - 1) * 86_400)
                for tz in [nil, -720, 0, 840] as [Int?] {
                    var headers = HTTPHeaders()
                    headers.add(name: "Authorization", value: "Bearer \(codec.issue(userID: user))")
                    let response = await routes(now).respond(to: HTTPRequest(
                        method: .get, path: "/learning/summary", query: tz.map { ["tz": String($0)] } ?? [:], headers: headers))
                    #expect(response.status == .ok)
                    let summary = try ContractCoding.decode(LearningSummaryResponse.self, from: response.body)
                    let today = try #require(LocalDay(summary.today))
                    let expected = try await fromTables(db, user: user, today: today)
                    #expect(summary.materialsReadToday == expected.read, "\(user) on \(today), tz \(String(describing: tz))")
                    #expect(summary.materialsCompleted == expected.completed, "\(user)")
                    #expect(summary.lastActiveDay == expected.lastActive, "\(user)")
                    #expect(summary.currentStreakDays == expected.current, "\(user) on \(today), tz \(String(describing: tz))")
                    #expect(summary.longestStreakDays == expected.longest, "\(user)")
                    checked += 1
                }
            }
        }
        #expect(checked == factories.count * 8 * 4)

        // A user with no event: every figure zero.
        let nobody = try await model.summary(user: "nobody", now: Date(), offsetMinutes: nil)
        #expect(nobody.materialsCompleted == 0 && nobody.currentStreakDays == 0 && nobody.lastActiveDay == nil)
    }

    func rows(_ db: ScratchDatabase) async throws -> [String] {
        try await db.client.query("SELECT \(UserSummary.columns) FROM analytics_users ORDER BY 1").map { row in
            row.columns.indices.map { row.text(row.columns[$0]) ?? "NULL" }.joined(separator: "|")
        }
    }

    /// The summary's figures as the read model computed them from the tables before the row.
    func fromTables(_ db: ScratchDatabase, user: String, today: LocalDay) async throws
        -> (read: Int, completed: Int, lastActive: String?, current: Int, longest: Int) {
        let row = try #require(try await db.client.query("""
            SELECT (SELECT count(*) FROM analytics_day_materials WHERE user_id = $1 AND day = DATE '1970-01-01' + $2::int),
                   (SELECT count(*) FROM analytics_completions WHERE user_id = $1),
                   (SELECT max(day)::text FROM analytics_daily WHERE user_id = $1 AND active_seconds > 0),
                   COALESCE((SELECT CASE WHEN end_day >= DATE '1970-01-01' + ($2::int - 1)
                                         THEN LEAST(end_day, DATE '1970-01-01' + $2::int) - start_day + 1 ELSE 0 END
                             FROM analytics_streak_runs WHERE user_id = $1 AND start_day <= DATE '1970-01-01' + $2::int
                             ORDER BY start_day DESC LIMIT 1), 0),
                   COALESCE((SELECT max(end_day - start_day) + 1 FROM analytics_streak_runs WHERE user_id = $1), 0)
            """, [user, today.number]).first)
        return (try row.decode(Int.self, 0), try row.decode(Int.self, 1), try row.decode(String?.self, 2),
                try row.decode(Int.self, 3), try row.decode(Int.self, 4))
    }
}
