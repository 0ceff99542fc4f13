import Contracts
import Foundation
import HTTPRouting
import ServiceRuntime

/// The learning app's reads (seed `003_*` §四–§六, §十), signed-in users only:
///
/// - `GET /knowledge-bases`, `/knowledge-bases/{id}` (with its paths), `/paths/{id}` (modules
///   and lessons in order), `/lessons/{id}`;
/// - `GET /learning/profile`, `/learning/sessions/{id}` (the analysis), `/learning/review-plan`,
///   `/learning/today` (the next lesson and the reviews due on the user's local today: `tz`,
///   minutes east of UTC, else the offset the app last sent, else that of their latest reading event);
/// - `POST /ai/analyze-learning-input`: at once, nothing stored: the model adapter when an endpoint
///   is configured (falling back to the built-in analyser), else the built-in analyser;
/// - `POST /ai/chat`: one turn over the lesson with the model endpoint (`AI_API_URL`); without
///   one, or when it does not answer, 503 `AI_UNAVAILABLE`.
public struct LearningRoutes: Sendable {
    let readModel: LearningReadModel
    let analytics: AnalyticsReadModel
    let authenticator: RequestAuthenticator
    let clock: @Sendable () -> Date
    let analyser = BuiltinLearningAnalyser()
    /// The model adapter, when `AI_API_URL` names an endpoint.
    let model: ChatCompletionsAnalyser?

    public init(readModel: LearningReadModel, analytics: AnalyticsReadModel, authenticator: RequestAuthenticator,
                clock: @escaping @Sendable () -> Date, model: ChatCompletionsAnalyser? = nil) {
        self.model = model
        self.readModel = readModel
        self.analytics = analytics
        self.authenticator = authenticator
        self.clock = clock
    }

    public func router() -> Router {
        var router = Router()
        router.get("/knowledge-bases") { request in
            _ = try await authenticator.userID(request)
            return .json(KnowledgeBaseList(knowledgeBases: try await readModel.knowledgeBases()), encoder: ContractCoding.encoder)
        }
        catalogItem("/knowledge-bases/:id", "knowledge base", on: &router) { try await readModel.knowledgeBase($0) }
        catalogItem("/paths/:id", "path", on: &router) { try await readModel.pathDetail($0) }
        catalogItem("/lessons/:id", "lesson", on: &router) { try await readModel.lesson($0) }
        router.get("/learning/sessions/:id") { request in
            let user = try await authenticator.userID(request)
            let id = try Self.id(request)
            guard let session = try await readModel.session(id, user: user) else {
                throw HTTPError.notFound("no analysed session \(id) (it may still be on its way)")
            }
            return .json(session, encoder: ContractCoding.encoder)
        }
        router.get("/learning/profile") { request in try await profile(request) }
        router.get("/learning/review-plan") { request in
            let user = try await authenticator.userID(request)
            let today = try await today(request, user: user).day
            return .json(ReviewPlan(today: today.description, pending: try await readModel.pendingReviews(user: user),
                                    completed: try await readModel.completedReviews(user: user, limit: 20)),
                         encoder: ContractCoding.encoder)
        }
        router.get("/learning/today") { request in try await todayTasks(request) }
        router.post("/ai/analyze-learning-input") { request in
            _ = try await authenticator.userID(request)
            let body = try Self.decode(AnalyzeLearningInputRequest.self, request)
            guard Identifier.isValid(body.lessonId) else { throw Self.invalid("lessonId", "lessonId must be \(Identifier.rule)") }
            guard body.userInput.utf8.count <= LearningSessionRequest.maxInputBytes else {
                throw Self.invalid("userInput", "userInput holds at most \(LearningSessionRequest.maxInputBytes) bytes")
            }
            guard let lesson = try await readModel.lesson(body.lessonId) else { throw HTTPError.notFound("no lesson \(body.lessonId)") }
            guard let model else {
                return .json(analyser.analyse(lesson: lesson, questionId: body.questionId, answer: body.userInput), encoder: ContractCoding.encoder)
            }
            let result = await model.analyse(lesson: lesson, questionId: body.questionId, answer: body.userInput)
            return .json(result.analysis, headers: ["X-Analyzer": result.analyzer], encoder: ContractCoding.encoder)
        }
        router.post("/ai/chat") { request in
            _ = try await authenticator.userID(request)
            guard let model else {
                throw HTTPError(.serviceUnavailable, code: ErrorCode.aiUnavailable.rawValue,
                                message: "the AI assistant needs a model endpoint (AI_API_URL), and none is configured")
            }
            let body = try Self.decode(AIChatRequest.self, request)
            guard Identifier.isValid(body.lessonId) else { throw Self.invalid("lessonId", "lessonId must be \(Identifier.rule)") }
            guard !body.message.isEmpty, body.message.utf8.count <= 4096 else { throw Self.invalid("message", "message must be 1…4096 bytes") }
            guard let lesson = try await readModel.lesson(body.lessonId) else { throw HTTPError.notFound("no lesson \(body.lessonId)") }
            guard let reply = await model.chat(lesson: lesson, message: body.message) else {
                throw HTTPError(.serviceUnavailable, code: ErrorCode.aiUnavailable.rawValue,
                                message: "the model endpoint did not answer; retry later", headers: ["Retry-After": "5"])
            }
            return .json(AIChatResponse(lessonId: lesson.id, reply: reply), encoder: ContractCoding.encoder)
        }
        return router
    }

    func today(_ request: HTTPRequest, user: String) async throws -> (day: LocalDay, profile: LearningReadModel.Profile) {
        let profile = try await readModel.profile(user)
        var offset = profile.offsetMinutes
        if request.query["tz"] != nil { offset = try QueryParameters.int(request, "tz", default: 0, range: LearningRecord.offsetRange) }
        return (LocalDay(instant: clock(), offsetMinutes: offset), profile)
    }

    func todayTasks(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await authenticator.userID(request)
        let (day, profile) = try await today(request, user: user)
        var next: LessonSummary?
        var completed = false
        if let pathID = profile.pathID, let path = try await readModel.path(pathID) {
            let done = try await readModel.latestScores(user: user)
            let lessons = try await readModel.lessonSummaries(path.lessonIds)
            let remaining = path.lessonIds.filter { done[$0] == nil }
            next = remaining.lazy.compactMap { lessons[$0] }.first
            completed = remaining.isEmpty && !path.lessonIds.isEmpty
        }
        let due = try await readModel.pendingReviews(user: user, through: day)
        return .json(LearningToday(today: day.description, knowledgeBaseId: profile.knowledgeBaseID, pathId: profile.pathID,
                                   nextLesson: next, reviewsDue: due, pathCompleted: completed), encoder: ContractCoding.encoder)
    }

    func profile(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await authenticator.userID(request)
        let (_, profile) = try await today(request, user: user)
        let scores = try await readModel.latestScores(user: user)
        let recent = try await readModel.recentSessions(user: user, limit: 20)
        var current: String?
        if let pathID = profile.pathID, let path = try await readModel.path(pathID) {
            current = path.lessonIds.first { scores[$0] == nil } ?? path.lessonIds.last
        }
        let level = scores.isEmpty ? nil
            : LearningAnalysis.level(for: Int((Double(scores.values.reduce(0, +)) / Double(scores.count)).rounded()))
        func unique(_ items: [String], limit: Int) -> [String] {
            var seen = Set<String>()
            return Array(items.filter { seen.insert($0).inserted }.prefix(limit))
        }
        let latest = recent.prefix(5)
        let summary = try await analytics.summary(user: user, now: clock(), offsetMinutes: profile.offsetMinutes)
        let mistakes = recent.filter { $0.masteryScore < 3 }.prefix(5).map {
            UserLearningProfile.Mistake(lessonId: $0.lessonId, sessionId: $0.id, weakPoints: $0.weakPoints, at: $0.endedAt)
        }
        let updated = [profile.updatedAt, recent.first?.endedAt].compactMap { $0 }.max()
        return .json(UserLearningProfile(
            userId: user, currentKnowledgeBaseId: profile.knowledgeBaseID, currentPathId: profile.pathID, currentLessonId: current,
            overallLevel: level, weakPoints: unique(latest.flatMap(\.weakPoints), limit: 10),
            strengths: unique(latest.flatMap(\.aiAnalysis.strengths), limit: 10), recentMistakes: Array(mistakes),
            reviewQueue: try await readModel.pendingReviews(user: user), learningStreak: summary.currentStreakDays, updatedAt: updated),
                     encoder: ContractCoding.encoder)
    }

    /// `GET pattern` for any signed-in user: the catalog item the path's `id` names, or 404 "no
    /// `what` {id}".
    private func catalogItem<Item: Encodable & Sendable>(_ pattern: String, _ what: String, on router: inout Router,
                                                          _ find: @escaping @Sendable (String) async throws -> Item?) {
        router.get(pattern) { request in
            _ = try await authenticator.userID(request)
            let id = try Self.id(request)
            guard let item = try await find(id) else { throw HTTPError.notFound("no \(what) \(id)") }
            return .json(item, encoder: ContractCoding.encoder)
        }
    }

    static func id(_ request: HTTPRequest) throws(HTTPError) -> String {
        guard let id = request.pathParameters["id"], Identifier.isValid(id) else { throw invalid("id", "an id is \(Identifier.rule)") }
        return id
    }

    static func invalid(_ field: String, _ message: String) -> HTTPError {
        HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "\(field): \(message)")
    }

    static func decode<T: Decodable>(_ type: T.Type, _ request: HTTPRequest) throws(HTTPError) -> T {
        guard (try? JSONSerialization.jsonObject(with: Data(request.body))) != nil else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidJSON.rawValue, message: "body is not valid JSON")
        }
        do { return try ContractCoding.decoder.decode(T.self, from: Data(request.body)) } catch {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                            message: HTTPError.describe(decodingError: error, bodyIsJSON: true))
        }
    }
}
