import Contracts
import Foundation
import HTTPRouting
import ServiceRuntime

/// The query API: summary, trend, heatmap and history of the token's user.
///
/// "Today" is the user's local today: the `tz` query parameter (minutes east of UTC) when
/// given, else the offset of the user's latest event, else UTC.
public struct AnalyticsRoutes: Sendable {
    let readModel: AnalyticsReadModel
    let authenticator: RequestAuthenticator
    let clock: @Sendable () -> Date

    public init(readModel: AnalyticsReadModel, authenticator: RequestAuthenticator, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.readModel = readModel
        self.authenticator = authenticator
        self.clock = clock
    }

    public func router() -> Router {
        var router = Router()
        router.get("/learning/summary") { request in try await summary(request) }
        router.get("/learning/trend") { request in try await trend(request) }
        router.get("/activity/heatmap") { request in try await heatmap(request) }
        router.get("/learning/history") { request in try await history(request) }
        return router
    }

    func summary(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await authenticator.userID(request)
        let rows = try await readModel.summary(user: user, now: clock(), offsetMinutes: try offsetMinutes(request))
        let figures = LearningFigures.summary(rows.days, today: rows.today, streaks: (rows.currentStreakDays, rows.longestStreakDays),
                                              lastActiveDay: rows.lastActiveDay, materialsReadToday: rows.materialsReadToday,
                                              materialsCompleted: rows.materialsCompleted)
        return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: figures.json)
    }

    func trend(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await authenticator.userID(request)
        let count = try QueryParameters.int(request, "days", default: 7, range: 1...90)
        let window = try await readModel.window(user: user, count: count, now: clock(), offsetMinutes: try offsetMinutes(request))
        return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"],
                            body: LearningFigures.trend(window.days, today: window.today, count: count).json)
    }

    func heatmap(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await authenticator.userID(request)
        let count = try QueryParameters.int(request, "days", default: 365, range: 1...366)
        let window = try await readModel.heatmapWindow(user: user, count: count, now: clock(), offsetMinutes: try offsetMinutes(request))
        return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"],
                            body: HeatmapBody.json(window.days, today: window.today, count: count))
    }

    func history(_ request: HTTPRequest) async throws -> HTTPResponse {
        let user = try await authenticator.userID(request)
        let limit = try QueryParameters.int(request, "limit", default: 20, range: 1...100)
        var cursor: HistoryCursor?
        if let text = request.query["cursor"], !text.isEmpty {
            guard let decoded = HistoryCursor(encoded: text) else { throw QueryParameters.invalid("cursor is not one this service issued") }
            cursor = decoded
        }
        let page = try await readModel.sessions(user: user, limit: limit, after: cursor)
        return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: page.json)
    }

    /// The `tz` parameter (minutes east of UTC), `nil` when absent: the read model then
    /// takes the offset of the user's latest event, else UTC.
    func offsetMinutes(_ request: HTTPRequest) throws(HTTPError) -> Int? {
        guard request.query["tz"] != nil else { return nil }
        return try QueryParameters.int(request, "tz", default: 0, range: AnalyticsProjection.offsetRange)
    }
}
