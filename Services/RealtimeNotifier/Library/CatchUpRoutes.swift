import Contracts
import Foundation
import HTTPRouting
import ServiceRuntime

/// `GET /realtime/v1/channels/{channel}/events?after=SEQ[&limit=N]`: the channel history
/// for a background refresh, with the same authorization as a join (Bearer JWT).
enum CatchUpRoutes {
    static let maxLimit = 1_000

    static func router(authenticator: RequestAuthenticator, authorizer: ChannelAuthorizer, history: ChannelHistory) -> Router {
        var router = Router()
        router.get("/realtime/v1/channels/:channel/events") { request in
            let claims = try await authenticator.claims(request)
            let raw = request.pathParameters["channel"] ?? ""
            guard let channel = ChannelName(raw.removingPercentEncoding ?? raw) else {
                throw HTTPError(.badRequest, code: ErrorCode.invalidQuery.rawValue, message: "channel must be room:{id} or user:{id}")
            }
            let after = try integer(request.query["after"], name: "after", default: 0)
            let limit = try integer(request.query["limit"], name: "limit", default: Int64(maxLimit))
            guard limit >= 1, limit <= Int64(maxLimit) else {
                throw HTTPError(.badRequest, code: ErrorCode.invalidQuery.rawValue, message: "limit must be within 1…\(maxLimit)")
            }
            if case .denied(let reason) = try await authorizer.canRead(claims, channel) {
                throw HTTPError(.forbidden, code: "FORBIDDEN", message: reason)
            }
            let state = try await history.state(channel)
            let start = try await history.start(channel, replay: .afterSeq(after), state: state)
            let events = try await history.events(channel, after: start.after, through: start.through, limit: Int(limit))
            let response = ChannelEventsResponse(
                channel: channel.name, events: events,
                oldestSeq: state.lastSeq > state.trimmedSeq ? state.trimmedSeq + 1 : nil,
                latestSeq: state.lastSeq > 0 ? state.lastSeq : nil, truncated: start.truncated)
            return .json(response, encoder: ContractCoding.encoder)
        }
        return router
    }

    static func integer(_ text: String?, name: String, default fallback: Int64) throws -> Int64 {
        guard let text, !text.isEmpty else { return fallback }
        guard let value = Int64(text), value >= 0 else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidQuery.rawValue, message: "\(name) must be a non-negative integer")
        }
        return value
    }
}
