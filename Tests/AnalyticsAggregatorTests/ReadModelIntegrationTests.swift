import AnalyticsAggregator
import Auth
import BackboneTestSupport
import Contracts
import Foundation
import HTTPRouting
import Postgres
import ServiceRuntime
import Testing

/// The read model against a real PostgreSQL: events applied as the runner applies them,
/// figures read through the HTTP routes.
@Suite("Analytics read model (PostgreSQL)", .serialized, .timeLimit(.minutes(3)),
       .enabled(if: Integration.isEnabled, "needs BACKBONE_INTEGRATION=1 and TEST_DATABASE_URL"))
struct ReadModelIntegrationTests {
    let codec = JWTCodec(secret: TestSecrets.jwt)

    func routes(_ db: ScratchDatabase, now: Date) -> Router {
        AnalyticsRoutes(readModel: AnalyticsReadModel(database: db.client), authenticator: RequestAuthenticator(secret: TestSecrets.jwt),
                        clock: { now }).router()
    }

    func get<T: Decodable>(_ router: Router, _ path: String, user: String, query: [String: String] = [:],
                           as type: T.Type) async throws -> T {
        let response = await router.respond(to: request(path, user: user, query: query))
        #expect(response.status == .ok, "\(path): \(String(decoding: response.body, as: UTF8.self))")
        return try ContractCoding.decode(T.self, from: response.body)
    }

    func request(_ path: String, user: String?, query: [String: String] = [:]) -> HTTPRequest {
        var headers = HTTPHeaders()
        if let user { headers.add(name: "Authorization", value: "Bearer \(codec.issue(userID: user))") }
        return HTTPRequest(method: .get, path: path, query: query, headers: headers)
    }

    @Test("events at 23:59 and 00:01 local count on different days for UTC+14 and UTC−12 users")
    func dayBoundaries() async throws {
        let db = try await ScratchDatabase.create("days")
        defer { Task { await db.drop() } }
        var east = EventFactory(offsetMinutes: 840)
        var west = EventFactory(offsetMinutes: -720)
        var events: [ReadingEventRecord] = []
        for user in [0, 1] {
            var factory = user == 0 ? east : west
            events.append(factory.event(at: factory.instant(2026, 6, 14, 23, 59), seconds: 100, session: "late"))
            events.append(factory.event(at: factory.instant(2026, 6, 15, 0, 1), seconds: 200, session: "early"))
            if user == 0 { east = factory } else { west = factory }
        }
        try await db.apply(events)
        // The same instant is already the 15th in Kiribati and still the 14th on Baker Island.
        let now = east.instant(2026, 6, 15, 10, 0)
        let router = routes(db, now: now)
        let eastTrend = try await get(router, "/learning/trend", user: east.user, query: ["days": "2"], as: LearningTrendResponse.self)
        #expect(eastTrend.points == [.init(day: "2026-06-14", activeSeconds: 100), .init(day: "2026-06-15", activeSeconds: 200)])
        let westTrend = try await get(router, "/learning/trend", user: west.user, query: ["days": "3"], as: LearningTrendResponse.self)
        #expect(westTrend.points.map(\.day) == ["2026-06-12", "2026-06-13", "2026-06-14"])
        // west's today (the 14th at 10:00 − 26 h) has nothing yet: their 15th lies in their future
        #expect(westTrend.points.map(\.activeSeconds) == [0, 0, 100])
        let eastSummary = try await get(router, "/learning/summary", user: east.user, as: LearningSummaryResponse.self)
        #expect(eastSummary.today == "2026-06-15")
        #expect(eastSummary.todayActiveSeconds == 200)
        #expect(eastSummary.currentStreakDays == 2)
        // an explicit tz moves "today"
        let shifted = try await get(router, "/learning/summary", user: east.user, query: ["tz": "-720"], as: LearningSummaryResponse.self)
        #expect(shifted.today == "2026-06-14")
        #expect(shifted.todayActiveSeconds == 100)
    }

    @Test("the statement's today is LocalDay(instant:offsetMinutes:) around midnight, before 1970 and at negative offsets")
    func todayInSQL() async throws {
        let db = try await ScratchDatabase.create("today")
        defer { Task { await db.drop() } }
        let model = AnalyticsReadModel(database: db.client)
        let offsets = [-720, -721, -300, -1, 0, 1, 345, 840]
        for offset in offsets {
            try await db.client.execute("""
                INSERT INTO analytics_users (user_id, latest_event_at, tz_offset_minutes) VALUES ($1, now(), $2)
                """, ["tz\(offset)", offset])
        }
        var checked = 0
        for midnight in [LocalDay(2026, 3, 10), LocalDay(1970, 1, 1), LocalDay(1969, 12, 31), LocalDay(1900, 3, 1)] {
            for offset in offsets {
                // the instants around the user's local midnight, fractions of a second included
                let local = Double(midnight.number * 86_400 - offset * 60)
                for delta in [-86_400.5, -1, -0.25, 0, 0.25, 0.999, 1, 59, 86_399.75] {
                    let now = Date(timeIntervalSince1970: local + delta)
                    let expected = LocalDay(instant: now, offsetMinutes: offset)
                    let given = try await model.window(user: "nobody", count: 1, now: now, offsetMinutes: offset).today
                    let stored = try await model.window(user: "tz\(offset)", count: 1, now: now, offsetMinutes: nil).today
                    let summary = try await model.summary(user: "tz\(offset)", now: now, offsetMinutes: nil).today
                    #expect(given == expected, "offset \(offset), \(now)")
                    #expect(stored == expected, "stored offset \(offset), \(now)")
                    #expect(summary == expected, "summary, stored offset \(offset), \(now)")
                    checked += 1
                }
            }
        }
        // no tz and no event yet: UTC
        let utc = Date(timeIntervalSince1970: Double(LocalDay(2026, 3, 10).number * 86_400) - 0.5)
        #expect(try await model.window(user: "nobody", count: 1, now: utc, offsetMinutes: nil).today == LocalDay(2026, 3, 9))
        #expect(checked == 4 * offsets.count * 9)
    }

    @Test("duplicates and any arrival order leave every figure identical")
    func duplicatesAndOrder() async throws {
        let events = Self.history(users: 4, days: 12)
        let clean = try await ScratchDatabase.create("clean")
        let messy = try await ScratchDatabase.create("messy")
        defer { Task { await clean.drop(); await messy.drop() } }
        try await clean.apply(events, batchSize: 1000)
        var delivered = events + events.shuffled().prefix(events.count / 3)
        delivered.shuffle()
        try await messy.apply(delivered, batchSize: 37)
        try await messy.apply(Array(events.prefix(50)), batchSize: 10)  // a replay after a "crash"
        let expected = try await clean.snapshot()
        #expect(try await messy.snapshot() == expected)
        #expect(expected.contains("|"))
    }

    @Test("streaks count a day only when it reaches the threshold and survive a not-yet-active today")
    func streaks() async throws {
        let db = try await ScratchDatabase.create("streaks")
        defer { Task { await db.drop() } }
        var user = EventFactory(offsetMinutes: 60)
        var events: [ReadingEventRecord] = []
        for (day, seconds) in [(1, 30), (1, 30), (2, 61), (3, 120), (5, 600), (6, 59), (7, 60), (8, 60), (9, 60)] {
            events.append(user.event(at: user.instant(2026, 3, day, 9), seconds: seconds, session: "d\(day)"))
        }
        try await db.apply(events)
        let today = user.instant(2026, 3, 10, 8)  // nothing yet on the 10th
        let summary = try await get(routes(db, now: today), "/learning/summary", user: user.user, as: LearningSummaryResponse.self)
        #expect(summary.currentStreakDays == 3)   // 7, 8, 9 (the 6th had 59 s)
        #expect(summary.longestStreakDays == 3)   // 1–3 (two halves reach 60 s) and 7–9
        #expect(summary.lastActiveDay == "2026-03-09")
        #expect(summary.todayActiveSeconds == 0)
        #expect(summary.weekActiveSeconds == 60)  // the week of Tuesday the 10th started on Monday the 9th
        // the aggregator restarted with a higher threshold recomputes every user's runs, once
        let strictRuns = StreakRuns(thresholdSeconds: 100)
        #expect(try await db.client.withTransaction { try await strictRuns.align(in: $0) })
        #expect(try await db.client.withTransaction { try await strictRuns.align(in: $0) } == false)
        let strict = try await get(routes(db, now: today), "/learning/summary", user: user.user, as: LearningSummaryResponse.self)
        #expect(strict.currentStreakDays == 0)
        #expect(strict.longestStreakDays == 1)
        // and back: the first batch under the old threshold finds the runs computed with another one
        try await db.apply([user.event(at: user.instant(2026, 3, 9, 20), seconds: 1, session: "late")])
        let back = try await get(routes(db, now: today), "/learning/summary", user: user.user, as: LearningSummaryResponse.self)
        #expect(back.currentStreakDays == 3 && back.longestStreakDays == 3)
        let later = try await get(routes(db, now: user.instant(2026, 3, 11, 8)), "/learning/summary", user: user.user,
                                  as: LearningSummaryResponse.self)
        #expect(later.currentStreakDays == 0)
    }

    @Test("the summary's streaks and last active day equal their definition over the whole history, for random histories in any order")
    func streaksMatchDefinition() async throws {
        var random = SplitMix64(state: 20261203)
        for round in 0..<4 {
            let db = try await ScratchDatabase.create("streak_runs_\(round)")
            let threshold = [1, 60, 100, 300][round]
            var factories = (0..<5).map { EventFactory(user: "runs-\(round)-\($0)", offsetMinutes: [-300, 0, 480, 840, -720][$0]) }
            var events: [ReadingEventRecord] = []
            var totals: [String: [Int: Int]] = [:]  // user → local day number → seconds
            for index in factories.indices {
                for day in 1...40 where Int.random(in: 0..<10, using: &random) < 7 {
                    // one to three events a day, each below the threshold often enough that days
                    // cross it only with a later event (a late one can join two runs)
                    for piece in 0..<Int.random(in: 1...3, using: &random) {
                        let seconds = Int.random(in: 0...(threshold * 3 / 4 + 1), using: &random)
                        let at = factories[index].instant(2026, 5, 1, 8 + piece * 5).addingTimeInterval(Double(day - 1) * 86_400)
                        events.append(factories[index].event(at: at, seconds: seconds, session: "d\(day)-\(piece)"))
                        totals[factories[index].user, default: [:]][LocalDay(year: 2026, month: 5, day: 1).number + day - 1, default: 0] += seconds
                    }
                }
            }
            var delivered = events + events.shuffled(using: &random).prefix(events.count / 4)
            delivered.shuffle(using: &random)
            try await db.apply(delivered, batchSize: Int.random(in: 3...40, using: &random), streakThresholdSeconds: threshold)
            let clean = try await ScratchDatabase.create("streak_runs_clean_\(round)")
            try await clean.apply(events, batchSize: 1000, streakThresholdSeconds: threshold)
            #expect(try await db.snapshot() == clean.snapshot(), "runs and every figure as from one ordered batch")
            await clean.drop()
            for factory in factories {
                let days = (totals[factory.user] ?? [:]).map { DailyActivity(day: LocalDay(number: $0.key), activeSeconds: $0.value) }
                for dayOfMay in [1, 9, 20, 30, 40, 41, 42, 60] {  // before, inside, just after and long after the history
                    let now = factory.instant(2026, 5, 1, 23).addingTimeInterval(Double(dayOfMay - 1) * 86_400)
                    let today = LocalDay(instant: now, offsetMinutes: factory.offsetMinutes)
                    let expected = LearningFigures.streaks(days, today: today, thresholdSeconds: threshold)
                    let summary = try await get(routes(db, now: now), "/learning/summary", user: factory.user, as: LearningSummaryResponse.self)
                    #expect(summary.currentStreakDays == expected.current, "\(factory.user) on \(today), threshold \(threshold)")
                    #expect(summary.longestStreakDays == expected.longest, "\(factory.user), threshold \(threshold)")
                    #expect(summary.lastActiveDay == LearningFigures.lastActiveDay(days)?.description)
                    let week = days.filter { $0.day >= today.startOfWeek && $0.day <= today }.reduce(0) { $0 + $1.activeSeconds }
                    #expect(summary.weekActiveSeconds == week)
                }
            }
            await db.drop()
        }
    }

    @Test("trend and heatmap are zero-filled, and bad parameters are a 400 INVALID_QUERY")
    func zeroFilling() async throws {
        let db = try await ScratchDatabase.create("fill")
        defer { Task { await db.drop() } }
        var user = EventFactory(offsetMinutes: 0)
        try await db.apply([user.event(at: user.instant(2026, 1, 10), seconds: 1000),
                            user.event(at: user.instant(2026, 1, 3), seconds: 4000)])
        let router = routes(db, now: user.instant(2026, 1, 10, 18))
        let heatmap = try await get(router, "/activity/heatmap", user: user.user, as: ActivityHeatmapResponse.self)
        #expect(heatmap.days.count == 365)
        #expect(heatmap.days.last == .init(day: "2026-01-10", activeSeconds: 1000, level: 2))
        #expect(heatmap.days[heatmap.days.count - 8] == .init(day: "2026-01-03", activeSeconds: 4000, level: 4))
        #expect(heatmap.days.map(\.activeSeconds).reduce(0, +) == 5000)
        let trend = try await get(router, "/learning/trend", user: user.user, as: LearningTrendResponse.self)
        #expect(trend.points.map(\.activeSeconds) == [0, 0, 0, 0, 0, 0, 1000])
        let empty = try await get(router, "/learning/trend", user: "nobody", query: ["days": "90"], as: LearningTrendResponse.self)
        #expect(empty.points.count == 90 && empty.points.allSatisfy { $0.activeSeconds == 0 })
        for (path, query) in [("/learning/trend", ["days": "0"]), ("/learning/trend", ["days": "91"]),
                              ("/activity/heatmap", ["days": "367"]), ("/learning/trend", ["days": "seven"]),
                              ("/learning/history", ["limit": "101"]), ("/learning/history", ["cursor": "bogus"]),
                              ("/learning/summary", ["tz": "900"])] {
            let response = await router.respond(to: request(path, user: user.user, query: query))
            #expect(response.status == .badRequest, "\(path) \(query)")
            #expect(String(decoding: response.body, as: UTF8.self).contains("INVALID_QUERY"))
        }
        let anonymous = await router.respond(to: request("/learning/summary", user: nil))
        #expect(anonymous.status == .unauthorized)
    }

    @Test("history pages return every session exactly once, newest first")
    func pagination() async throws {
        let db = try await ScratchDatabase.create("history")
        defer { Task { await db.drop() } }
        var user = EventFactory(offsetMinutes: -300)
        var other = EventFactory(offsetMinutes: 0)
        var events: [ReadingEventRecord] = []
        for i in 0..<53 {
            // pairs of sessions share a start time: the cursor must break the tie
            let start = user.instant(2026, 2, 1).addingTimeInterval(Double(i / 2) * 3600)
            events.append(user.event(.opened, at: start, seconds: 0, session: "s\(i)", material: "m\(i % 5)"))
            events.append(user.event(.heartbeat, at: start.addingTimeInterval(60), seconds: 60, session: "s\(i)", material: "m\(i % 5)"))
            if i % 3 == 0 { events.append(user.event(.closed, at: start.addingTimeInterval(90), seconds: 5, session: "s\(i)", material: "m\(i % 5)")) }
            events.append(other.event(at: start, seconds: 5, session: "o\(i)"))
        }
        try await db.apply(events.shuffled())
        let router = routes(db, now: user.instant(2026, 2, 5))
        var seen: [LearningHistoryResponse.Session] = []
        var cursor: String?
        var pages = 0
        repeat {
            var query = ["limit": "7"]
            if let cursor { query["cursor"] = cursor }
            let page = try await get(router, "/learning/history", user: user.user, query: query, as: LearningHistoryResponse.self)
            #expect(page.sessions.count <= 7)
            seen += page.sessions
            cursor = page.nextCursor
            pages += 1
        } while cursor != nil && pages < 20
        #expect(seen.count == 53)
        #expect(Set(seen.map(\.clientSessionId)).count == 53)
        #expect(seen.allSatisfy { $0.clientSessionId.hasPrefix("s") })
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.startedAt >= $1.startedAt })
        let closed = try #require(seen.first { $0.clientSessionId == "s0" })
        #expect(closed.endedAt.timeIntervalSince(closed.startedAt) == 90)
        #expect(closed.activeSeconds == 65)
        let open = try #require(seen.first { $0.clientSessionId == "s1" })
        #expect(open.endedAt.timeIntervalSince(open.startedAt) == 60)
    }

    /// A few weeks of reading for several users in several time zones, with sessions that
    /// cross midnight, completions and closes.
    static func history(users: Int, days: Int) -> [ReadingEventRecord] {
        var events: [ReadingEventRecord] = []
        let offsets = [840, -720, 330, 0, -300, 540]
        for u in 0..<users {
            var factory = EventFactory(user: "history-user-\(u)", offsetMinutes: offsets[u % offsets.count])
            for d in 0..<days where (d + u) % 4 != 3 {
                let start = factory.instant(2026, 4, 1 + d, 23, 40)
                let session = "u\(u)-d\(d)"
                events.append(factory.event(.opened, at: start, seconds: 0, session: session, material: "m\(d % 3)"))
                for h in 1...6 {
                    events.append(factory.event(.heartbeat, at: start.addingTimeInterval(Double(h) * 300), seconds: 20 * h + u,
                                                session: session, material: "m\(d % 3)"))
                }
                if d % 2 == 0 {
                    events.append(factory.event(.markedAsRead, at: start.addingTimeInterval(1900), seconds: 3, session: session, material: "m\(d % 3)"))
                }
                events.append(factory.event(.closed, at: start.addingTimeInterval(2000), seconds: 1, session: session, material: "m\(d % 3)"))
            }
        }
        return events
    }
}
