import Contracts
import Foundation
import HTTPRouting
import JSON
import Kafka
import ServiceRuntime

/// `POST /realtime/v1/api/broadcast`: Supabase's REST broadcast, for the other backends (the
/// web remix editor, comments) that announce `remix_created`, `comment_new`… (seed `002_*`
/// Flow C). Body `{"messages":[{"topic","event","payload"}]}` with a service token; each
/// message is produced to `realtime.broadcasts.v1` (key: channel) and the answer, 202, comes
/// once the broker acknowledged every one. A topic may carry Supabase's `realtime:` prefix.
enum BroadcastRoutes {
    static let maxMessages = 100

    struct Body: Decodable {
        struct Message: Decodable {
            var topic: String
            var event: String
            var payload: JSONValue?
        }
        var messages: [Message]
    }

    static func router(authenticator: RequestAuthenticator, producer: any KafkaRecordSender, topic: String,
                       retryAfterSeconds: Int = 5) -> Router {
        var router = Router()
        router.post("/realtime/v1/api/broadcast") { request in
            _ = try await authenticator.requireService(request)
            let body: Body
            do {
                body = try ContractCoding.decoder.decode(Body.self, from: Data(request.body))
            } catch {
                let code = (try? JSONSerialization.jsonObject(with: Data(request.body), options: [.fragmentsAllowed])) == nil
                    ? ErrorCode.invalidJSON : ErrorCode.invalidField
                throw HTTPError(.badRequest, code: code.rawValue, message: HTTPError.describe(decodingError: error))
            }
            guard !body.messages.isEmpty, body.messages.count <= maxMessages else {
                throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                                message: "messages: between 1 and \(maxMessages) messages per request")
            }
            var records: [KafkaProducerRecord] = []
            for (index, message) in body.messages.enumerated() {
                let channel = ChannelName(topic: message.topic) ?? ChannelName(message.topic)
                guard let channel, channel.kind != .other else {
                    throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                                    message: "messages[\(index)].topic: not a channel this notifier serves (room:{id} or user:{id})")
                }
                guard !message.event.isEmpty, message.event.utf8.count <= 128 else {
                    throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "messages[\(index)].event: 1–128 bytes")
                }
                let broadcast = RealtimeBroadcast(channel: channel.name, event: message.event, payload: message.payload ?? .object([:]))
                records.append(KafkaProducerRecord(topic: topic, key: Array(channel.name.utf8), value: try ContractCoding.encode(broadcast)))
            }
            for result in await producer.send(records) {
                if case .failure = result {
                    throw HTTPError(.serviceUnavailable, code: ErrorCode.serviceUnavailable.rawValue,
                                    message: "the broadcast topic is unavailable; retry later",
                                    headers: ["Retry-After": String(retryAfterSeconds)])
                }
            }
            return HTTPResponse(status: .accepted)
        }
        return router
    }
}
