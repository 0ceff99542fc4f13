import AnalyticsAggregator
import Auth
import BackboneTestSupport
import Contracts
import Foundation
import HTTPRouting
import Postgres
import ServiceRuntime
import Testing

/// The read statements of the summary, trend and heatmap read plain columns and leave the rules
/// — the user's today, the current streak, the materials read today, the days of the window — to
/// Swift. Against the statements that computed them in SQL before (kept here verbatim as the
/// reference), and against what a user sees around midnight in a `tz` other than their own.
@Suite("Analytics read statements (PostgreSQL)", .serialized, .timeLimit(.minutes(5)),
       .enabled(if: Integration.isEnabled, "needs BACKBONE_INTEGRATION=1 and TEST_DATABASE_URL"))
struct ReadStatementsTests {
    let codec = JWTCodec(secret: TestSecrets.jwt)

    @Test("the summary, trend, heatmap and history answer what the statements that computed them in SQL answered, for every tz around the users' midnights")
    func sameAsFormerStatements() async throws {
        var random = SplitMix64(state: 20261208)
        let db = try await ScratchDatabase.create("read_statements")
        defer { Task { await db.drop() } }
        let offsets = [-720, -300, 0, 330, 480, 840]
        let factories = offsets.indices.map { EventFactory(user: "reads-\($0)", offsetMinutes: offsets[$0]) }
        var events: [ReadingEventRecord] = []
        for var factory in factories {
            for day in 0..<60 where Int.random(in: 0..<10, using: &random) < 6 {
                for piece in 0..<Int.random(in: 1...3, using: &random) {
                    // milliseconds too, for the history's instants
                    let at = factory.instant(2026, 1, 10, 1 + piece * 9)
                        .addingTimeInterval(Double(day) * 86_400 + Double(Int.random(in: 0..<1000, using: &random)) / 1000)
                    let type: ReadingEventType = [.markedAsRead, .closed, .heartbeat, .heartbeat, .heartbeat, .heartbeat][
                        Int.random(in: 0..<6, using: &random)]
                    events.append(factory.event(type, at: at, seconds: Int.random(in: 0...70, using: &random),
                                                session: "d\(day)-\(piece)", material: "m\(Int.random(in: 0..<4, using: &random))"))
                }
            }
        }
        try await db.apply(events.shuffled(using: &random), batchSize: 11)
        // A stored offset outside the offsets an event may carry (a row older than the rule):
        // its today can lie outside the window the statements read for every offset in use.
        try await db.client.execute("UPDATE analytics_users SET tz_offset_minutes = -721 WHERE user_id = 'reads-0'")

        let model = AnalyticsReadModel(database: db.client)
        var compared = 0
        for midnightOffset in [-721, -300, 480, 840] {
            for day in [-2, 0, 21, 58, 59, 60, 75] {
                let midnight = Double((LocalDay(2026, 1, 10).number + day) * 86_400 - midnightOffset * 60)
                for delta in [-61.0, -0.5, 0, 30, 43_200] {
                    let now = Date(timeIntervalSince1970: midnight + delta)
                    for factory in factories {
                        for tz in [nil, -720, 0, 840] as [Int?] {
                            let context = "\(factory.user) at \(now), tz \(String(describing: tz))"
                            let summary = try await model.summary(user: factory.user, now: now, offsetMinutes: tz)
                            let former = try await Self.formerSummary(db.client, user: factory.user, now: now, offsetMinutes: tz)
                            #expect(summary.today == former.today, "\(context)")
                            #expect(Self.sorted(summary.days) == former.days, "\(context)")
                            #expect(summary.currentStreakDays == former.current, "\(context)")
                            #expect(summary.longestStreakDays == former.longest, "\(context)")
                            #expect(summary.lastActiveDay == former.lastActive, "\(context)")
                            #expect(summary.materialsReadToday == former.read, "\(context)")
                            #expect(summary.materialsCompleted == former.completed, "\(context)")
                            for count in [1, 7, 90] {
                                let window = try await model.window(user: factory.user, count: count, now: now, offsetMinutes: tz)
                                let formerWindow = try await Self.formerWindow(db.client, user: factory.user, count: count, now: now,
                                                                               offsetMinutes: tz)
                                #expect(window.today == formerWindow.today && Self.sorted(window.days) == formerWindow.days,
                                        "\(context), \(count) days")
                            }
                            for count in [7, 365] {
                                let months = try await model.heatmapWindow(user: factory.user, count: count, now: now, offsetMinutes: tz)
                                let formerMonths = try await Self.formerMonths(db.client, user: factory.user, count: count, now: now,
                                                                               offsetMinutes: tz)
                                #expect(months.today == formerMonths.today && Self.sorted(months.days) == formerMonths.days,
                                        "\(context), heatmap of \(count) days")
                            }
                            compared += 1
                        }
                    }
                }
            }
        }
        #expect(compared == 4 * 7 * 5 * factories.count * 4)

        // The history, page by page, against the statement that took the instants to
        // milliseconds in SQL.
        for factory in factories {
            for limit in [1, 7, 100] {
                var cursor: HistoryCursor?
                var pages = 0
                repeat {
                    let page = try await model.sessions(user: factory.user, limit: limit, after: cursor)
                    let former = try await Self.formerSessions(db.client, user: factory.user, limit: limit, after: cursor)
                    #expect(page.json == former.json, "\(factory.user), \(limit) a page, page \(pages)")
                    cursor = page.nextCursor.flatMap(HistoryCursor.init(encoded:))
                    pages += 1
                } while cursor != nil && pages < 200
                #expect(pages > 1 || limit == 100)
            }
        }
    }

    @Test("a tz west of the user's own shows yesterday's materials and the streak that ended yesterday; one east of it, a new day")
    func tzAcrossMidnight() async throws {
        let db = try await ScratchDatabase.create("read_statements_tz")
        defer { Task { await db.drop() } }
        // A reader in Beijing (UTC+8): the 3rd and 4th of March qualify (60 s), the 5th has 20 s
        // on one material, the 6th qualifies again with two materials.
        var reader = EventFactory(user: "beijing", offsetMinutes: 480)
        var events: [ReadingEventRecord] = []
        for (day, seconds, material) in [(3, 60, "a"), (4, 60, "a"), (5, 20, "b"), (6, 40, "c"), (6, 30, "d")] {
            events.append(reader.event(at: reader.instant(2026, 3, day, 1, 30), seconds: seconds, session: "s\(day)\(material)",
                                       material: material))
        }
        try await db.apply(events)
        let model = AnalyticsReadModel(database: db.client)
        func summary(at now: Date, tz: Int?) async throws -> LearningSummaryResponse {
            let router = AnalyticsRoutes(readModel: model, authenticator: RequestAuthenticator(secret: TestSecrets.jwt),
                                         clock: { now }).router()
            var headers = HTTPHeaders()
            headers.add(name: "Authorization", value: "Bearer \(codec.issue(userID: reader.user))")
            let response = await router.respond(to: HTTPRequest(method: .get, path: "/learning/summary",
                                                                 query: tz.map { ["tz": String($0)] } ?? [:], headers: headers))
            #expect(response.status == .ok)
            return try ContractCoding.decode(LearningSummaryResponse.self, from: response.body)
        }

        // 03:00 on the 6th in Beijing: the user's own today.
        let early = reader.instant(2026, 3, 6, 3)
        let own = try await summary(at: early, tz: nil)
        #expect(own.today == "2026-03-06")
        #expect(own.todayActiveSeconds == 70 && own.materialsReadToday == 2)
        #expect(own.currentStreakDays == 1 && own.longestStreakDays == 2)
        #expect(own.lastActiveDay == "2026-03-06")

        // The same instant in New York (UTC−5) is 14:00 on the 5th: the day before the latest
        // run and the latest day with materials — that day's one material and its 20 s, and the
        // run of the 3rd and 4th, which ended yesterday.
        let west = try await summary(at: early, tz: -300)
        #expect(west.today == "2026-03-05")
        #expect(west.todayActiveSeconds == 20 && west.materialsReadToday == 1)
        #expect(west.currentStreakDays == 2 && west.longestStreakDays == 2)
        #expect(west.weekActiveSeconds == 140)  // Monday the 2nd to Thursday the 5th
        #expect(west.lastActiveDay == "2026-03-06")

        // 20:00 on the 6th in Beijing is 02:00 on the 7th in Kiribati (UTC+14): a new day with
        // nothing read yet, and the streak of the 6th, which ended yesterday.
        let late = reader.instant(2026, 3, 6, 20)
        let east = try await summary(at: late, tz: 840)
        #expect(east.today == "2026-03-07")
        #expect(east.todayActiveSeconds == 0 && east.materialsReadToday == 0)
        #expect(east.currentStreakDays == 1 && east.longestStreakDays == 2)
        #expect(east.weekActiveSeconds == 210)

        // Kiribati two days on: the streak is over, the record stays.
        let gone = try await summary(at: late.addingTimeInterval(2 * 86_400), tz: 840)
        #expect(gone.today == "2026-03-09")
        #expect(gone.currentStreakDays == 0 && gone.longestStreakDays == 2 && gone.weekActiveSeconds == 0)
    }

    @Test("days go to and come back from PostgreSQL's date text in any year, and arrays with NULL elements decode")
    func dateAndArrayText() async throws {
        let db = try await ScratchDatabase.create("read_statements_text")
        defer { Task { await db.drop() } }
        let days = [LocalDay(-4712, 1, 1), LocalDay(-1, 2, 29), LocalDay(0, 2, 29), LocalDay(1, 1, 1), LocalDay(999, 12, 31),
                    LocalDay(1969, 12, 31), LocalDay(1970, 1, 1), LocalDay(2026, 12, 6), LocalDay(9999, 12, 31),
                    LocalDay(10_000, 1, 1), LocalDay(200_000, 7, 15)]
        for day in days {
            let row = try #require(try await db.client.queryPrepared(
                "SELECT $1::date, $1::date - DATE '1970-01-01'", [day]).first)
            #expect(try row.decode(Int.self, 1) == day.number, "\(day) binds as its own date")
            #expect(try row.decode(LocalDay.self, 0) == day, "\(day) reads back from \(row.text(row.columns[0]) ?? "NULL")")
        }
        #expect(LocalDay.decode(postgresText: "infinity") == nil && LocalDay.decode(postgresText: "2026-02-30") == nil)
        let arrays = try #require(try await db.client.query("""
            SELECT ARRAY[1, NULL, -3, 9223372036854775807]::bigint[], ARRAY[NULL, NULL]::bigint[], '{}'::bigint[],
                   ARRAY[NULL, 5]::bigint[]
            """).first)
        #expect(try arrays.decode([Int?].self, 0) == [1, nil, -3, Int.max])
        #expect(try arrays.decode([Int?].self, 1) == [nil, nil])
        #expect(try arrays.decode([Int?].self, 2) == [])
        #expect(try arrays.decode([Int?].self, 3) == [nil, 5])
        #expect([Int?].decode(postgresText: "{1,NULLX}") == nil && [Int?].decode(postgresText: "{1,,2}") == nil)
    }

    static func sorted(_ days: [DailyActivity]) -> [DailyActivity] { days.sorted { $0.day < $1.day } }

    // MARK: - The former statements, verbatim but for the helpers' text inlined

    static let formerToday = """
        floor(($2::bigint + 60 * COALESCE($3::int, (SELECT tz_offset_minutes FROM analytics_users WHERE user_id = $1), 0)) / 86400.0)::int
        """

    static func days(_ rows: PostgresRows, dayColumn: Int) throws -> [DailyActivity] {
        try rows.compactMap { row in
            guard let number = try row.decode(Int?.self, dayColumn) else { return nil }
            return DailyActivity(day: LocalDay(number: number), activeSeconds: try row.decode(Int.self, dayColumn + 1))
        }
    }

    static func formerWindow(_ database: PostgresClient, user: String, count: Int, now: Date,
                             offsetMinutes: Int?) async throws -> (today: LocalDay, days: [DailyActivity]) {
        let rows = try await database.query("""
            WITH t AS MATERIALIZED (SELECT \(formerToday) AS today)
            SELECT t.today, d.day - DATE '1970-01-01' AS n, d.active_seconds
            FROM t LEFT JOIN analytics_daily d
              ON d.user_id = $1 AND d.day BETWEEN DATE '1970-01-01' + (t.today - $4::int + 1) AND DATE '1970-01-01' + t.today
            ORDER BY d.day
            """, [user, LocalDay.epochSeconds(now), offsetMinutes, max(1, count)])
        return (LocalDay(number: try #require(rows.first).decode(Int.self, 0)), try days(rows, dayColumn: 1))
    }

    static func formerMonths(_ database: PostgresClient, user: String, count: Int, now: Date,
                             offsetMinutes: Int?) async throws -> (today: LocalDay, days: [DailyActivity]) {
        let rows = try await database.query("""
            WITH t AS MATERIALIZED (SELECT today, today - $4::int + 1 AS first FROM (SELECT \(formerToday) AS today) AS s)
            SELECT t.today, t.first, m.month - DATE '1970-01-01' AS n, array_replace(m.seconds, NULL, 0)
            FROM t LEFT JOIN analytics_months m
              ON m.user_id = $1
             AND m.month BETWEEN DATE '1970-01-01' + t.first - (extract(day FROM DATE '1970-01-01' + t.first)::int - 1)
                             AND DATE '1970-01-01' + t.today
            ORDER BY m.month
            """, [user, LocalDay.epochSeconds(now), offsetMinutes, max(1, count)])
        let first = try #require(rows.first)
        let today = try first.decode(Int.self, 0), from = try first.decode(Int.self, 1)
        var days: [DailyActivity] = []
        for row in rows {
            guard let month = try row.decode(Int?.self, 2) else { continue }
            for (index, value) in try row.decode([Int].self, 3).enumerated() where value != 0 && (from...today).contains(month + index) {
                days.append(DailyActivity(day: LocalDay(number: month + index), activeSeconds: value))
            }
        }
        return (LocalDay(number: today), days)
    }

    static func formerSessions(_ database: PostgresClient, user: String, limit: Int, after cursor: HistoryCursor?) async throws
        -> LearningHistoryResponse {
        let columns = """
            client_session_id, material_id, active_seconds, completed,
            (extract(epoch FROM started_at) * 1000)::bigint AS started_ms,
            (extract(epoch FROM COALESCE(closed_at, last_event_at)) * 1000)::bigint AS ended_ms
            """
        let rows: PostgresRows
        if let cursor {
            rows = try await database.query("""
                SELECT \(columns) FROM analytics_sessions
                WHERE user_id = $1
                  AND (started_at, client_session_id) < (TIMESTAMPTZ 'epoch' + INTERVAL '1 millisecond' * $2::bigint, $3)
                ORDER BY started_at DESC, client_session_id DESC LIMIT $4
                """, [user, cursor.startedAtMillis, cursor.clientSessionID, limit + 1])
        } else {
            rows = try await database.query("""
                SELECT \(columns) FROM analytics_sessions WHERE user_id = $1
                ORDER BY started_at DESC, client_session_id DESC LIMIT $2
                """, [user, limit + 1])
        }
        var sessions: [LearningHistoryResponse.Session] = []
        var last: HistoryCursor?
        for row in rows.prefix(limit) {
            let started = try row.decode(Int64.self, "started_ms")
            let id = try row.decode(String.self, "client_session_id")
            sessions.append(LearningHistoryResponse.Session(
                clientSessionId: id, materialId: try row.decode(String.self, "material_id"),
                startedAt: Date(timeIntervalSince1970: Double(started) / 1000),
                endedAt: Date(timeIntervalSince1970: Double(try row.decode(Int64.self, "ended_ms")) / 1000),
                activeSeconds: try row.decode(Int.self, "active_seconds"), completed: try row.decode(Bool.self, "completed")))
            last = HistoryCursor(startedAtMillis: started, clientSessionID: id)
        }
        return LearningHistoryResponse(sessions: sessions, nextCursor: rows.count > limit ? last?.encoded : nil)
    }

    static func formerSummary(_ database: PostgresClient, user: String, now: Date, offsetMinutes: Int?) async throws
        -> (today: LocalDay, days: [DailyActivity], current: Int, longest: Int, lastActive: LocalDay?, read: Int, completed: Int) {
        let day = "DATE '1970-01-01' +"
        let rows = try await database.query("""
            WITH t AS MATERIALIZED (
                SELECT today,
                       CASE WHEN u.materials_day IS NULL OR u.materials_day < \(day) today THEN 0
                            WHEN u.materials_day = \(day) today THEN u.materials_day_count
                            ELSE (SELECT count(*) FROM analytics_day_materials WHERE user_id = $1 AND day = \(day) today) END AS read,
                       COALESCE(u.materials_completed, 0) AS completed,
                       u.last_active_day - DATE '1970-01-01' AS last_active,
                       CASE WHEN u.last_run_start IS NULL THEN 0
                            WHEN u.last_run_start <= \(day) today THEN
                                CASE WHEN u.last_run_end >= \(day) (today - 1)
                                     THEN LEAST(u.last_run_end, \(day) today) - u.last_run_start + 1 ELSE 0 END
                            ELSE (SELECT CASE WHEN end_day >= \(day) (today - 1) THEN LEAST(end_day, \(day) today) - start_day + 1 ELSE 0 END
                                  FROM analytics_streak_runs WHERE user_id = $1 AND start_day <= \(day) today
                                  ORDER BY start_day DESC LIMIT 1) END AS current,
                       COALESCE(u.longest_streak_days, 0) AS longest
                FROM (SELECT floor(($2::bigint + 60 * COALESCE($3::int, u.tz_offset_minutes, 0)) / 86400.0)::int AS today, u.*
                      FROM (SELECT 1) AS one LEFT JOIN analytics_users u ON u.user_id = $1) AS u)
            SELECT t.today, t.read, t.completed, t.last_active, COALESCE(t.current, 0), t.longest,
                   d.day - DATE '1970-01-01' AS n, d.active_seconds
            FROM t LEFT JOIN analytics_daily d
              ON d.user_id = $1 AND d.day BETWEEN \(day) (t.today - 6) AND \(day) t.today
            ORDER BY d.day
            """, [user, LocalDay.epochSeconds(now), offsetMinutes])
        let first = try #require(rows.first)
        return (LocalDay(number: try first.decode(Int.self, 0)), try days(rows, dayColumn: 6),
                try first.decode(Int.self, 4), try first.decode(Int.self, 5), try first.decode(Int?.self, 3).map(LocalDay.init(number:)),
                try first.decode(Int.self, 1), try first.decode(Int.self, 2))
    }
}
