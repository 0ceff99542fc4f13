import AnalyticsAggregator
import Auth
@testable import BackboneCLI
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import HTTPRouting
import Ingest
import Kafka
import Lifecycle
import Postgres
import ProgressProjector
import PrometheusMetrics
import RealtimeNotifier
import ServiceLogging
import ServiceRuntime
import Synchronization
import Testing

/// The learning app's loop (seed `003_*` §二 "MVP 核心学习闭环", §十一) for one user, against
/// ingest, the progress projector, the analytics aggregator and the realtime notifier on one
/// embedded Kafka cluster and one PostgreSQL database: the sample path is written with a
/// service token, the user chooses it, reads the first lesson, sends a recall answer, hears
/// `analysis_ready` on `user:{id}`, reads the analysis, finds the review on the day SM-2
/// scheduled it, sees "today" name the next lesson and the due review, completes the review
/// and sees it rescheduled.
@Suite("Learning loop end to end", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(4)))
struct LearningLoopEndToEndTests {
    static let secret = "learning-loop-secret-0123456789abc"
    static let user = "learner-7c1e"

    /// A clock the test moves forward (the analytics side's "now").
    final class TestClock: Sendable {
        let now = Mutex(Date())
        func advance(days: Int) { now.withLock { $0 = $0.addingTimeInterval(Double(days) * 86_400) } }
        var read: @Sendable () -> Date { { self.now.withLock { $0 } } }
    }

    @Test("sign in, choose the sample path, read lesson 1, answer its recall question: analysis_ready arrives, the analysis follows the seed, the review is due on SM-2's day, today names lesson 2 and the review, completing it reschedules; a rebuild brings the same model back; feedback and the waitlist keep one entry each; deletion erases the learner")
    func loop() async throws {
        try await InProcessBackbone.with(databasePrefix: "learning_loop", secret: Self.secret,
                                         services: ["ingest", "progress-projector", "analytics-aggregator", "realtime-notifier"]) { backbone in
            _ = try await PostgresMigrator(migrations: ServiceCatalog.allMigrations, logger: .disabled).migrate(try backbone.context("ingest").database)
            let clock = TestClock()
            let ingest = IngestService(context: try backbone.context("ingest"),
                                       configuration: IngestConfiguration(rateLimitPerSecond: 1000, rateLimitBurst: 1000)).parts()
            let progress = ProgressProjectorService(context: try backbone.context("progress-projector")).parts()
            var analyticsSettings = AnalyticsConfiguration()
            analyticsSettings.learningOutboxInterval = .milliseconds(200)
            let analytics = AnalyticsService(context: try backbone.context("analytics-aggregator"), configuration: analyticsSettings,
                                             clock: clock.read).parts()
            let realtime = RealtimeNotifierService(
                context: try backbone.context("realtime-notifier"),
                configuration: RealtimeConfiguration(maxBatchWait: .milliseconds(5), maintenanceInterval: .seconds(1), instanceID: "learning")).parts()
            for parts in [ingest, progress, analytics, realtime] { backbone.start(parts) }

            let codec = JWTCodec(secret: Self.secret)
            let userToken = codec.issue(userID: Self.user, ttl: 3600)
            let serviceToken = codec.issue(userID: "catalog", ttl: 3600, role: "service")
            func call(_ router: Router, _ method: HTTPMethod, _ path: String, token: String? = nil, query: [String: String] = [:],
                      _ body: [UInt8] = []) async -> HTTPResponse {
                await router.respond(to: HTTPRequest(method: method, path: path, query: query, headers: [
                    "Authorization": "Bearer \(token ?? userToken)", "Content-Type": "application/json"], body: body))
            }
            func json(_ response: HTTPResponse) -> [String: Any] {
                (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
            }
            func eventually(_ what: String, _ check: () async throws -> Bool) async throws {
                let deadline = ContinuousClock.now + .seconds(60)
                while ContinuousClock.now < deadline {
                    if try await check() { return }
                    try await Task.sleep(for: .milliseconds(100))
                }
                Issue.record("timed out waiting for \(what)")
                throw CancellationError()
            }

            // The catalog: a user may not write it; the service token's writes are taken after the broker has them.
            #expect(await call(ingest.router, .put, "/knowledge-bases/kb-x", Array(#"{"version":1,"title":"x"}"#.utf8)).status == .forbidden)
            #expect(try await SampleLearningPath.load(into: ingest.router, serviceToken: serviceToken).isEmpty)
            let pathID = SampleLearningPath.pathID
            try await eventually("the sample path with its five lessons") {
                let path = await call(analytics.router, .get, "/paths/\(pathID)")
                let modules = json(path)["modules"] as? [[String: Any]] ?? []
                return modules.flatMap { $0["lessons"] as? [[String: Any]] ?? [] }.count == 5
            }
            let bases = json(await call(analytics.router, .get, "/knowledge-bases"))["knowledgeBases"] as? [[String: Any]] ?? []
            #expect(bases.map { $0["id"] as? String } == [SampleLearningPath.knowledgeBaseID])
            let detail = json(await call(analytics.router, .get, "/knowledge-bases/\(SampleLearningPath.knowledgeBaseID)"))
            #expect((detail["paths"] as? [[String: Any]])?.first?["lessonCount"] as? Int == 5)
            let first = SampleLearningPath.lessons[0]
            let second = SampleLearningPath.lessons[1]
            let lessonBody = json(await call(analytics.router, .get, "/lessons/\(first.id)"))
            #expect(lessonBody["keyConcepts"] as? [String] == first.keyConcepts)
            #expect((lessonBody["recallQuestions"] as? [[String: Any]])?.first?["expectedPoints"] as? [String]
                    == first.recallQuestions[0].expectedPoints)
            // A version below 1 is refused at the edge.
            var stale = first
            stale.version = 0
            #expect(await call(ingest.router, .put, "/lessons/\(first.id)", token: serviceToken, try ContractCoding.encode(stale)).status
                    == .badRequest)

            // The goal.
            #expect(await call(ingest.router, .post, "/learning/goal", Array(
                #"{"knowledgeBaseId":"\#(SampleLearningPath.knowledgeBaseID)","pathId":"\#(pathID)","clientTimezoneOffsetMinutes":480}"#.utf8))
                .status == .accepted)
            try await eventually("the goal on the profile") {
                json(await call(analytics.router, .get, "/learning/profile"))["currentPathId"] as? String == pathID
            }
            // A goal naming a knowledge base or path ingest never took is 404 and produces nothing: the
            // other learner who sent them has no profile.
            let stranger = codec.issue(userID: "stranger-learner", ttl: 3600)
            for (base, path) in [("kb-nowhere", pathID), (SampleLearningPath.knowledgeBaseID, "path-nowhere"), ("kb-nowhere", "path-nowhere")] {
                let refused = await call(ingest.router, .post, "/learning/goal", token: stranger,
                                         Array(#"{"knowledgeBaseId":"\#(base)","pathId":"\#(path)"}"#.utf8))
                #expect(refused.status == .notFound, "\(base) \(path)")
                #expect(json(refused)["error"].flatMap { ($0 as? [String: Any])?["code"] as? String } == "NOT_FOUND")
            }

            // Reading lesson 1, as reading events always are.
            let start = clock.read().addingTimeInterval(-600)
            let events = [ReadingEventType.opened, .positionChanged, .markedAsRead].enumerated().map { i, type in
                ReadingEventUploadItem(eventId: UUID().uuidString.lowercased(), clientSessionId: "read-1", readingTargetType: .knowledgeSource,
                                       materialId: first.id, knowledgeBaseId: first.knowledgeBaseId, eventType: type,
                                       position: .page(i + 1, of: 3), activeSecondsDelta: i == 0 ? 0 : 90,
                                       clientTimestamp: start.addingTimeInterval(Double(i) * 90), clientTimezoneOffsetMinutes: 480,
                                       sequence: i, platform: "iOS", appVersion: "1.0")
            }
            let batch = json(await call(ingest.router, .post, "/learning/reading-events/batch",
                                        try ContractCoding.encode(ReadingEventBatchRequest(events: events))))
            #expect((batch["results"] as? [[String: Any]])?.allSatisfy { $0["status"] as? String == "accepted" } == true)

            // Bad sessions leave nothing: an unknown lesson, times the wrong way round.
            let now = clock.read()
            #expect(await call(ingest.router, .post, "/learning/sessions", try ContractCoding.encode(LearningSessionRequest(
                sessionId: "s-unknown", lessonId: "lesson-nowhere", startedAt: start, endedAt: now, userInput: "x"))).status == .notFound)
            let backwards = await call(ingest.router, .post, "/learning/sessions", try ContractCoding.encode(LearningSessionRequest(
                sessionId: "s-backwards", lessonId: first.id, startedAt: now, endedAt: start, userInput: "x")))
            #expect(backwards.status == .badRequest)
            #expect(json(backwards)["error"].flatMap { ($0 as? [String: Any])?["code"] as? String } == "INVALID_FIELD")

            // The recall answer, sent twice (a retry after a timeout): one session, one analysis.
            let sessionID = "6c0f3b6e-learning-loop-1"
            let answer = "合上书回忆比重读更有效，因为提取记忆会加强记忆。重读只带来熟悉感，并不代表能想起来。"
            let session = LearningSessionRequest(sessionId: sessionID, lessonId: first.id, startedAt: start, endedAt: now, userInput: answer,
                                                 questionId: "q1", clientTimezoneOffsetMinutes: 480)
            for _ in 0..<2 {
                #expect(await call(ingest.router, .post, "/learning/sessions", try ContractCoding.encode(session)).status == .accepted)
            }

            // analysis_ready on user:{id}, as the notifier keeps it for the app's catch-up.
            var pushed: [String: Any] = [:]
            try await eventually("analysis_ready on user:\(Self.user)") {
                let events = json(await call(realtime.router, .get, "/realtime/v1/channels/user:\(Self.user)/events", query: ["after": "0"]))
                let ready = (events["events"] as? [[String: Any]] ?? []).filter { $0["event"] as? String == "analysis_ready" }
                if let payload = ready.first?["payload"] as? [String: Any] { pushed = payload }
                return ready.count == 1
            }
            #expect(pushed["sessionId"] as? String == sessionID)
            #expect(pushed["lessonId"] as? String == first.id)

            // The analysis, in the seed's shape.
            let stored = await call(analytics.router, .get, "/learning/sessions/\(sessionID)")
            #expect(stored.status == .ok)
            let view = try ContractCoding.decode(LearningSessionView.self, from: stored.body)
            try view.aiAnalysis.validate()
            #expect(view.aiAnalysis == BuiltinLearningAnalyser().analyse(lesson: first, questionId: "q1", answer: answer))
            #expect((2...4).contains(view.masteryScore), "two of three points and one concept: \(view.aiAnalysis)")
            #expect(view.aiAnalysis.weakPoints.contains { $0.contains("想不起来的地方需要重点复习") })
            #expect(pushed["masteryScore"] as? Int == view.masteryScore)
            #expect(await call(analytics.router, .get, "/learning/sessions/\(sessionID)", token: codec.issue(userID: "someone-else", ttl: 60))
                    .status == .notFound)

            // The review plan: SM-2 from the answer's score, due on the user's local day (UTC+8) of the answer plus the interval.
            let state = ReviewScheduler().next(after: .new, quality: view.masteryScore)
            let answerDay = LocalDay(instant: now, offsetMinutes: 480)
            let dueDay = LocalDay(number: answerDay.number + state.intervalDays)
            let plan = try ContractCoding.decode(ReviewPlan.self, from: await call(analytics.router, .get, "/learning/review-plan").body)
            #expect(plan.pending.count == 1)
            let review = try #require(plan.pending.first)
            #expect(review.lessonId == first.id && review.sourceSessionId == sessionID && review.status == "pending")
            #expect(review.scheduledDay == dueDay.description)
            #expect(view.reviewAt == review.scheduledAt)

            // Today: lesson 2 next; the review not due yet …
            var today = try ContractCoding.decode(LearningToday.self, from: await call(analytics.router, .get, "/learning/today").body)
            #expect(today.nextLesson?.id == second.id)
            #expect(today.today == answerDay.description)
            #expect(today.reviewsDue.isEmpty)
            let profile = try ContractCoding.decode(UserLearningProfile.self, from: await call(analytics.router, .get, "/learning/profile").body)
            #expect(profile.currentLessonId == second.id)
            #expect(profile.overallLevel == LearningAnalysis.level(for: view.masteryScore))
            #expect(profile.reviewQueue.map(\.id) == [review.id])
            // … and on the day it is due, it is there.
            clock.advance(days: state.intervalDays)
            today = try ContractCoding.decode(LearningToday.self, from: await call(analytics.router, .get, "/learning/today").body)
            #expect(today.today == dueDay.description)
            #expect(today.nextLesson?.id == second.id)
            #expect(today.reviewsDue.map(\.id) == [review.id])

            // Someone else's review, a review of no session, a review id of the wrong form, a session id
            // another user already sent, feedback naming an unknown lesson or someone else's session:
            // 404 (422 for the id) and nothing produced — the other learner's writes leave no trace.
            for id in [review.id, "rv-nowhere", "rv-\(sessionID)-2", "nowhere"] {
                let refused = await call(ingest.router, .post, "/learning/reviews/\(id)/complete", token: stranger,
                                         Array(#"{"masteryScore":5}"#.utf8))
                #expect(refused.status == .notFound, "\(id)")
                #expect(json(refused)["error"].flatMap { ($0 as? [String: Any])?["code"] as? String } == "NOT_FOUND")
            }
            #expect(await call(ingest.router, .post, "/learning/reviews/rv-nowhere/complete", Array(#"{}"#.utf8)).status == .notFound)
            let stolen = await call(ingest.router, .post, "/learning/sessions", token: stranger, try ContractCoding.encode(LearningSessionRequest(
                sessionId: sessionID, lessonId: second.id, startedAt: start, endedAt: now, userInput: "我的答案")))
            #expect(stolen.status == .unprocessableEntity)
            #expect(json(stolen)["error"].flatMap { ($0 as? [String: Any])?["code"] as? String } == "IDEMPOTENCY_KEY_REUSED")
            for body in [#"{"text":"好","lessonId":"lesson-nowhere"}"#, #"{"text":"好","sessionId":"\#(sessionID)"}"#] {
                #expect(await call(ingest.router, .post, "/feedback", token: stranger, Array(body.utf8)).status == .notFound, "\(body)")
            }
            #expect(await call(analytics.router, .get, "/learning/profile", token: stranger).status == .ok)
            let strangerPlan = try ContractCoding.decode(ReviewPlan.self, from: await call(analytics.router, .get, "/learning/review-plan",
                                                                                         token: stranger).body)
            #expect(strangerPlan.pending.isEmpty && strangerPlan.completed.isEmpty)
            let strangerProfile = json(await call(analytics.router, .get, "/learning/profile", token: stranger))
            #expect(strangerProfile["currentPathId"] == nil || strangerProfile["currentPathId"] is NSNull)

            // Completing the review reschedules it by SM-2.
            #expect(await call(ingest.router, .post, "/learning/reviews/\(review.id)/complete", Array(#"{"masteryScore":5}"#.utf8)).status
                    == .accepted)
            var rescheduled: ReviewPlan?
            try await eventually("the review completed and rescheduled") {
                let plan = try ContractCoding.decode(ReviewPlan.self, from: await call(analytics.router, .get, "/learning/review-plan").body)
                rescheduled = plan
                return plan.completed.map(\.id) == [review.id] && plan.pending.count == 1
            }
            let next = try #require(rescheduled?.pending.first)
            let nextState = ReviewScheduler().next(after: state, quality: 5)
            #expect(next.lessonId == first.id && next.id != review.id)
            #expect(next.intervalDays == nextState.intervalDays && next.scheduledDay > review.scheduledDay)
            // The review after it is hers to complete; one further on is not (the aggregator has not scheduled it).
            #expect(await call(ingest.router, .post, "/learning/reviews/\(review.id)-2/complete", Array(#"{}"#.utf8)).status == .notFound)
            #expect(await call(ingest.router, .post, "/learning/reviews/\(review.id)-99/complete", Array(#"{}"#.utf8)).status == .notFound)
            #expect(await call(ingest.router, .post, "/learning/reviews/\(next.id)/complete", token: stranger, Array(#"{}"#.utf8)).status
                    == .notFound)
            // Completing it again changes nothing.
            #expect(await call(ingest.router, .post, "/learning/reviews/\(review.id)/complete", Array(#"{"masteryScore":1}"#.utf8)).status
                    == .accepted)
            #expect(await call(ingest.router, .post, "/learning/reviews/\(next.id)/complete", Array(#"{"masteryScore":4}"#.utf8)).status
                    == .accepted)
            try await eventually("the review after it completed") {
                try ContractCoding.decode(ReviewPlan.self, from: await call(analytics.router, .get, "/learning/review-plan").body)
                    .completed.map(\.id).contains(next.id)
            }
            #expect(await call(analytics.router, .post, "/ai/chat", Array(#"{"lessonId":"x","message":"hi"}"#.utf8)).status == .serviceUnavailable)
            let direct = json(await call(analytics.router, .post, "/ai/analyze-learning-input",
                                         Array(#"{"lessonId":"\#(first.id)","userInput":"\#(answer)","questionId":"q1"}"#.utf8)))
            #expect(direct["masteryScore"] as? Int == view.masteryScore)

            // `backbone rebuild learning` re-projects the topic into a shadow and swaps it in: the same model comes back.
            let db = try backbone.context("analytics-aggregator").database
            func snapshot() async throws -> [String] {
                var lines: [String] = []
                for sql in ["SELECT session_id, analysis::text AS a, mastery_score::text AS m, review_at::text AS r FROM learning_sessions ORDER BY 1",
                            "SELECT id, status, scheduled_day::text AS d, interval_days::text AS i, ease_factor::text AS e, COALESCE(completed_at::text, '-') AS c FROM learning_review_tasks ORDER BY 1",
                            "SELECT id, version::text AS v FROM learning_lessons ORDER BY 1",
                            "SELECT user_id, path_id, tz_offset_minutes::text AS t FROM learning_profiles ORDER BY 1"] {
                    for row in try await db.query(sql) {
                        lines.append(row.columns.indices.map { row.text(row.columns[$0]) ?? "NULL" }.joined(separator: "|"))
                    }
                    lines.append("--")
                }
                return lines
            }
            let before = try await snapshot()
            _ = try await db.execute("UPDATE learning_sessions SET mastery_score = 0")
            _ = try await db.execute("DELETE FROM learning_review_tasks WHERE status = 'completed'")
            let rebuilt = try await CLIProcess.run(["rebuild", "learning"], environment: [
                "KAFKA_BROKERS": backbone.cluster.bootstrapServers, "DATABASE_URL": backbone.database.url, "JWT_SECRET": Self.secret])
            #expect(rebuilt.status == 0, "\(rebuilt.stderr)")
            #expect(try await snapshot() == before)

            // Feedback (kept once per id) and the website's waitlist (no account; never says who is listed).
            let feedback = Array(#"{"feedbackId":"fb-1","text":"复习提醒很有用","lessonId":"lesson-active-recall","appVersion":"1.0","rating":5}"#.utf8)
            for _ in 0..<2 { #expect(await call(ingest.router, .post, "/feedback", feedback).status == .accepted) }
            #expect(await call(ingest.router, .post, "/feedback",
                               Array(#"{"text":"这次分析很准","sessionId":"\#(sessionID)"}"#.utf8)).status == .accepted)
            #expect(await call(ingest.router, .post, "/feedback", Array(#"{"text":"   "}"#.utf8)).status == .badRequest)
            try await eventually("the feedback kept once") {
                try await db.query("SELECT count(*)::bigint AS n FROM learning_feedback WHERE user_id = $1", [Self.user]).first?
                    .decode(Int64.self, "n") == 2
            }
            func join(_ body: String) async -> HTTPResponse {
                await ingest.router.respond(to: HTTPRequest(method: .post, path: "/waitlist", headers: ["Content-Type": "application/json"],
                                                            body: Array(body.utf8)))
            }
            let joined = await join(#"{"email":"Reader@Example.com","source":"website"}"#)
            let again = await join(#"{"email":" reader@example.com ","source":"ad"}"#)
            #expect(joined.status == .accepted && again.status == .accepted && joined.body == again.body)
            #expect(await join(#"{"email":"not-an-address","source":"website"}"#).status == .badRequest)
            #expect(await join(#"{"email":"a@b","source":"website"}"#).status == .badRequest)
            let listed = try await db.query("SELECT email, source FROM waitlist_entries")
            #expect(listed.count == 1)
            #expect(try listed.first?.decode(String.self, "email") == "reader@example.com")
            #expect(try listed.first?.decode(String?.self, "source") == "website")
            var limited = 0
            for _ in 0..<5 where await join(#"{"email":"reader@example.com"}"#).status == .tooManyRequests { limited += 1 }
            #expect(limited > 0, "the same address is rate-limited")

            // Account deletion: the learner's profile, sessions, reviews, feedback and queued pushes go; the catalog stays.
            let deletion = UserDeletionRecord(requestId: "del-learning-1", userId: Self.user, requestedAt: Date(), purgeAt: Date())
            _ = try await db.query("SELECT 1") // the pool is alive
            for result in try await backbone.context("ingest").producer.send([KafkaProducerRecord(
                topic: Topics.userDeletions, key: Array(Self.user.utf8), value: try ContractCoding.encode(deletion))]) { _ = try result.get() }
            try await eventually("the learner erased from the learning read model") {
                var left: Int64 = 0
                for table in ["learning_profiles", "learning_sessions", "learning_review_tasks", "learning_feedback",
                              "ingest_learning_sessions"] {
                    left += try await db.query("SELECT count(*)::bigint AS n FROM \(table) WHERE user_id = $1", [Self.user]).first?
                        .decode(Int64.self, "n") ?? 0
                }
                return left == 0
            }
            // The erased user's token is refused from now on; another user still finds the catalog.
            #expect(await call(analytics.router, .get, "/learning/sessions/\(sessionID)").status == .unauthorized)
            #expect(await call(analytics.router, .get, "/paths/\(pathID)", token: codec.issue(userID: "next-learner", ttl: 60)).status == .ok)
            // A late write of the erased user (here straight to the topic) is not brought back.
            let late = LearningRecord(kind: .session, userId: Self.user, receivedAt: Date(), session: LearningSessionRequest(
                sessionId: "after-erasure", lessonId: second.id, startedAt: start, endedAt: start, userInput: "x"))
            for result in try await backbone.context("ingest").producer.send([KafkaProducerRecord(
                topic: Topics.learningSessions, key: Array(Self.user.utf8), value: try ContractCoding.encode(late))]) { _ = try result.get() }
            try await Task.sleep(for: .seconds(2))
            #expect(try await db.query("SELECT count(*)::bigint AS n FROM learning_sessions WHERE user_id = $1", [Self.user]).first?
                .decode(Int64.self, "n") == 0)
        }
    }
}
