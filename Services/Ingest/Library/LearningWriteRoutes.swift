import Contracts
import Foundation
import HTTPRouting
import Kafka
import ServiceLogging
import ServiceRuntime

/// The learning app's writes (seed `003_*` §四–§六), each validated by `LearningRecord`'s rule
/// and answered only after the broker acknowledged its record on `learning.sessions.v1`; the
/// analytics aggregator applies them (catalog, profile, analysis, review plan).
///
/// - `PUT /knowledge-bases/{id}`, `PUT /paths/{id}`, `PUT /lessons/{id}` (service token): the
///   catalog, versioned (a write whose version is not above the stored one changes nothing).
///   A lesson is also registered in `materials` as a shared `knowledgeSource` of its base, so
///   its reading events are accepted as any lesson's.
/// - `POST /learning/goal`, `POST /learning/sessions`, `POST /learning/reviews/{id}/complete`
///   (user token): 202. A session is idempotent on `sessionId` (the aggregator keeps the first).
/// - `POST /feedback` (user token): 202; kept once per `feedbackId`.
///
/// A write naming something the write edge never accepted — a goal's knowledge base or path, a
/// session's lesson, a review not from one of the user's sessions, a feedback's lesson or
/// session — is 404 `NOT_FOUND` and produces nothing (`LearningRegistry`).
struct LearningWriteRoutes: Sendable {
    let catalog: MaterialCatalog
    let registry: LearningRegistry
    let producer: any KafkaRecordSender
    let authenticator: RequestAuthenticator
    let limiter: UserRateLimiter
    let topic: String
    let retryAfterSeconds: Int
    let logger: Logger
    let clock: @Sendable () -> Date

    func register(on router: inout Router, guarded: (@escaping HTTPHandler) -> HTTPHandler) {
        router.put("/knowledge-bases/:id") { try await putKnowledgeBase($0) }
        router.put("/paths/:id") { try await putPath($0) }
        router.put("/lessons/:id") { try await putLesson($0) }
        router.post("/learning/goal", guarded { try await goal($0) })
        router.post("/learning/sessions", guarded { try await session($0) })
        router.post("/learning/reviews/:id/complete", guarded { try await completeReview($0) })
        router.post("/feedback") { try await feedback($0) }
    }

    /// `POST /feedback`: 202 `{id}` (the app's `feedbackId`, else a minted one) once the broker has it.
    func feedback(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (user, feedback, record) = try await userWrite(FeedbackRequest.self, request) { user, feedback in
            if feedback.feedbackId == nil { feedback.feedbackId = UUID().uuidString.lowercased() }
            return LearningRecord(kind: .feedback, userId: user, receivedAt: clock(), feedback: feedback)
        }
        if let lesson = feedback.lessonId { try await requireLesson(lesson, user: user) }
        if let session = feedback.sessionId {
            guard try await registered({ try await registry.owner(ofSession: session) }) == user else {
                throw HTTPError.notFound("no session \(session)")
            }
        }
        try await produce(record, checked: true)
        return .json(LearningWriteAccepted(id: feedback.feedbackId ?? ""), status: .accepted, encoder: ContractCoding.encoder)
    }

    func putKnowledgeBase(_ request: HTTPRequest) async throws -> HTTPResponse {
        let base = try await putCatalogItem(KnowledgeBase.self, request, id: \.id) {
            LearningRecord(kind: .knowledgeBase, userId: nil, receivedAt: clock(), knowledgeBase: $0)
        }
        try await registered { try await registry.register(.knowledgeBase, id: base.id, knowledgeBaseId: nil, version: base.version) }
        return .json(CatalogWriteAccepted(id: base.id, version: base.version), status: .accepted, encoder: ContractCoding.encoder)
    }

    func putPath(_ request: HTTPRequest) async throws -> HTTPResponse {
        let path = try await putCatalogItem(LearningPath.self, request, id: \.id) {
            LearningRecord(kind: .path, userId: nil, receivedAt: clock(), path: $0)
        }
        try await registered { try await registry.register(.path, id: path.id, knowledgeBaseId: path.knowledgeBaseId, version: path.version) }
        return .json(CatalogWriteAccepted(id: path.id, version: path.version), status: .accepted, encoder: ContractCoding.encoder)
    }

    func putLesson(_ request: HTTPRequest) async throws -> HTTPResponse {
        let lesson = try await putCatalogItem(Lesson.self, request, id: \.id) {
            LearningRecord(kind: .lesson, userId: nil, receivedAt: clock(), lesson: $0)
        }
        let id = lesson.id
        do {
            _ = try await catalog.upsert(id: id, MaterialUpsertRequest(readingTargetType: .knowledgeSource,
                                                                      knowledgeBaseId: lesson.knowledgeBaseId))
        } catch {
            logger.error("lesson not registered as a material", metadata: ["error": "\(error)"])
            throw unavailable("the materials catalog is unavailable; retry later")
        }
        return .json(CatalogWriteAccepted(id: id, version: lesson.version), status: .accepted, encoder: ContractCoding.encoder)
    }

    func goal(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (_, goal, record) = try await userWrite(LearningGoalRequest.self, request) { user, goal in
            LearningRecord(kind: .goal, userId: user, receivedAt: clock(), goal: goal)
        }
        let known = try await registered { try await registry.knows(knowledgeBaseId: goal.knowledgeBaseId, pathId: goal.pathId) }
        guard known.base else { throw HTTPError.notFound("no knowledge base \(goal.knowledgeBaseId)") }
        guard known.path else { throw HTTPError.notFound("no path \(goal.pathId) in knowledge base \(goal.knowledgeBaseId)") }
        try await produce(record, checked: true)
        return .json(LearningWriteAccepted(id: goal.pathId), status: .accepted, encoder: ContractCoding.encoder)
    }

    func session(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (user, session, record) = try await userWrite(LearningSessionRequest.self, request) { user, session in
            LearningRecord(kind: .session, userId: user, receivedAt: clock(), session: session)
        }
        try await requireLesson(session.lessonId, user: user)
        let claim = try await registered { try await registry.claim(session: session.sessionId, user: user) }
        guard claim.owner == user else {
            throw HTTPError(.unprocessableEntity, code: ErrorCode.idempotencyKeyReused.rawValue,
                            message: "sessionId \(session.sessionId) is already used; send a new id")
        }
        do { try await produce(record, checked: true) } catch {
            if claim.inserted { await registry.withdraw(session: session.sessionId, user: user) }
            throw error
        }
        return .json(LearningWriteAccepted(id: session.sessionId), status: .accepted, encoder: ContractCoding.encoder)
    }

    func completeReview(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await authenticator.userID(request)
        try limiter.admit(user)
        let id = try pathID(request)
        let body = request.body.isEmpty ? ReviewCompletionRequest()
            : try IngestRequestDecoding.decode(ReviewCompletionRequest.self, from: request)
        let record = LearningRecord(kind: .reviewCompleted, userId: user, receivedAt: clock(), reviewId: id, review: body)
        try check(record)
        guard try await registered({ try await registry.ownsReview(id, user: user) }) else { throw HTTPError.notFound("no review \(id)") }
        try await produce(record, checked: true)
        try await registered { try await registry.completed(review: id, user: user) }
        return .json(LearningWriteAccepted(id: id), status: .accepted, encoder: ContractCoding.encoder)
    }

    /// A learner's write: the user token's user, admitted by the rate limiter, the body decoded
    /// and the record `record` makes of them (it may complete the body) validated.
    private func userWrite<Body: Decodable>(_ type: Body.Type, _ request: HTTPRequest,
                                            record: (String, inout Body) -> LearningRecord) async throws
        -> (user: String, body: Body, record: LearningRecord) {
        let user = try await authenticator.userID(request)
        try limiter.admit(user)
        var body = try IngestRequestDecoding.decode(Body.self, from: request)
        let made = record(user, &body)
        try check(made)
        return (user, body, made)
    }

    /// 404 unless `id` is a lesson the catalog holds (not deleted, shared or the user's).
    private func requireLesson(_ id: String, user: String) async throws {
        let lessons: [String: MaterialResponse]
        do { lessons = try await catalog.lookup([id]) } catch {
            logger.error("materials catalog unavailable", metadata: ["error": "\(error)"])
            throw unavailable("the materials catalog is unavailable; retry later")
        }
        guard let lesson = lessons[id], !lesson.deleted, lesson.ownerUserId == nil || lesson.ownerUserId == user else {
            throw HTTPError.notFound("no lesson \(id)")
        }
    }

    /// A question to or write of the registry; 503 with `Retry-After` when the database fails
    /// (a record already produced is idempotent: the app's retry finds it).
    @discardableResult
    private func registered<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch {
            logger.error("learning registry unavailable", metadata: ["error": "\(error)"])
            throw unavailable("the learning registry is unavailable; retry later")
        }
    }

    /// 400 `INVALID_FIELD` naming the field a record breaks.
    private func check(_ record: LearningRecord) throws(HTTPError) {
        do { try record.validate() } catch {
            throw IngestRequestDecoding.invalidField(error.field, error.message)
        }
    }

    /// Validates (unless the caller just did), then produces and waits for the acknowledgement:
    /// 503 with `Retry-After` when the broker did not take it (the app keeps its copy and retries).
    private func produce(_ record: LearningRecord, checked: Bool = false) async throws {
        if !checked { try check(record) }
        let value = try ContractCoding.encode(record)
        do {
            _ = try await producer.send(KafkaProducerRecord(topic: topic, key: Array(record.key.utf8), value: value))
        } catch {
            logger.error("Kafka did not acknowledge a learning record", metadata: ["kafka.topic": topic, "error": error.description])
            throw unavailable("the learning queue is unavailable; retry later")
        }
    }

    /// A catalog `PUT` (service token): the body, its `id` the path's whether or not the body
    /// names one, produced as `record` makes it once the broker acknowledged it.
    private func putCatalogItem<Item: Decodable>(_ type: Item.Type, _ request: HTTPRequest, id: WritableKeyPath<Item, String>,
                                                 record: (Item) -> LearningRecord) async throws -> Item {
        _ = try await authenticator.requireService(request)
        let named = try pathID(request)
        var item = try IngestRequestDecoding.decode(Item.self, from: request, filling: "id", with: named)
        item[keyPath: id] = named
        try await produce(record(item))
        return item
    }

    private func pathID(_ request: HTTPRequest) throws(HTTPError) -> String {
        guard let id = request.pathParameters["id"], Identifier.isValid(id) else {
            throw IngestRequestDecoding.invalidField("id", "an id is \(Identifier.rule)")
        }
        return id
    }

    private func unavailable(_ message: String) -> HTTPError {
        HTTPError(.serviceUnavailable, code: ErrorCode.serviceUnavailable.rawValue, message: message,
                  headers: ["Retry-After": String(retryAfterSeconds)])
    }
}

extension IngestRequestDecoding {
    /// Decodes a catalog body whose `id` may be left out (the path names it): the path's id is
    /// filled in when the body has none.
    static func decode<T: Decodable>(_ type: T.Type, from request: HTTPRequest, filling key: String, with value: String) throws(HTTPError) -> T {
        guard var object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any] else {
            _ = try decode(T.self, from: request)
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "body must be a JSON object")
        }
        if object[key] == nil { object[key] = value }
        guard let data = try? JSONSerialization.data(withJSONObject: object) else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidJSON.rawValue, message: "body is not valid JSON")
        }
        var filled = request
        filled.body = Array(data)
        return try decode(T.self, from: filled)
    }
}
