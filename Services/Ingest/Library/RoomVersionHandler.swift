import Contracts
import Foundation
import HTTPTypes
import Kafka
import Logging
import Metrics
import ServiceRuntime

/// `POST /rooms/versions`: the upload-complete step of a CrowdRoom scan.
///
/// Validates, reserves the version (room ownership, monthly quota), produces a
/// `RoomTranscodeRequest` to the transcode topic keyed by room id, waits for Kafka's
/// acknowledgement and answers 202 `{"versionId","status":"queued"}`. The same
/// `versionId` again gets the same answer without a second request (a version still
/// `pending` after a crash is produced again).
struct RoomVersionHandler: Sendable {
    let configuration: IngestConfiguration
    let validator: RoomVersionValidator
    let store: RoomVersionStore
    let producer: KafkaProducer
    let authenticator: RequestAuthenticator
    let metrics: MetricsRegistry
    let logger: Logger

    func handle(_ request: HTTPRequest) async throws -> HTTPResponse {
        let userID = try authenticator.userID(request)
        let body = try Self.decode(request)
        try validator.validate(body)
        let now = Date()
        let reservation: RoomVersionStore.Reservation
        do {
            reservation = try await store.reserve(body, ownerUserID: userID, quotaBytes: configuration.monthlyUploadQuotaBytes,
                                                  now: now)
        } catch {
            logger.error("room store unavailable", metadata: ["error": "\(error)"])
            throw unavailable("room store unavailable")
        }
        switch reservation {
        case .roomOwnedByAnotherUser:
            throw HTTPError(.forbidden, code: ErrorCode.forbidden.rawValue, message: "the room belongs to another user")
        case .quotaExceeded(let used):
            throw HTTPError(.forbidden, code: ErrorCode.quotaExceeded.rawValue,
                            message: "monthly upload quota exceeded (\(used) of \(configuration.monthlyUploadQuotaBytes) bytes used)")
        case .existing(let roomID, let owner, let status):
            guard owner == userID, roomID == body.roomId else {
                throw HTTPError(.forbidden, code: ErrorCode.forbidden.rawValue, message: "versionId belongs to another upload")
            }
            if status == "pending" { try await produce(body, userID: userID, now: now, releaseOnFailure: false) }
            return accepted(body.versionId)
        case .reserved:
            try await produce(body, userID: userID, now: now, releaseOnFailure: true)
            metrics.increment("ingest_room_versions_total")
            return accepted(body.versionId)
        }
    }

    private func produce(_ body: RoomVersionCompleteRequest, userID: String, now: Date, releaseOnFailure: Bool) async throws {
        let value = try ContractCoding.encode(RoomTranscodeRequest(ownerUserId: userID, request: body, requestedAt: now))
        do {
            _ = try await producer.send(KafkaProducerRecord(topic: configuration.roomTranscodeTopic, key: Array(body.roomId.utf8),
                                                            value: value))
        } catch {
            logger.error("Kafka did not acknowledge the transcode request",
                         metadata: ["kafka.topic": configuration.roomTranscodeTopic, "error": error.description])
            if releaseOnFailure {
                do { try await store.release(body.versionId) } catch {
                    logger.warning("could not release a pending version", metadata: ["error": "\(error)"])
                }
            }
            throw unavailable("the transcode queue is unavailable; retry later")
        }
        do { try await store.markQueued(body.versionId) } catch {
            logger.warning("could not mark a version queued", metadata: ["error": "\(error)"])
        }
    }

    private func accepted(_ versionID: String) -> HTTPResponse {
        .json(RoomVersionAccepted(versionId: versionID, status: .queued), status: .accepted, encoder: ContractCoding.encoder)
    }

    private func unavailable(_ message: String) -> HTTPError {
        HTTPError(.serviceUnavailable, code: ErrorCode.serviceUnavailable.rawValue, message: message,
                  headers: ["Retry-After": String(configuration.unavailableRetryAfterSeconds)])
    }

    /// Like `IngestRequestDecoding.decode`, but a malformed `tags` is `INVALID_TAGS` and a
    /// malformed `redactions` entry `REDACTION_INVALID`.
    static func decode(_ request: HTTPRequest) throws(HTTPError) -> RoomVersionCompleteRequest {
        do {
            return try IngestRequestDecoding.decode(RoomVersionCompleteRequest.self, from: request)
        } catch where error.code == ErrorCode.invalidField.rawValue {
            let root = (try? ContractCoding.decoder.decode(JSONValue.self, from: Data(request.body)))
            let failing = Self.firstFailingField(request.body)
            if failing == "tags", root?["tags"] != nil {
                throw HTTPError(.badRequest, code: ErrorCode.invalidTags.rawValue, message: "tags must be an array of strings")
            }
            if failing == "redactions", root?["redactions"] != nil {
                throw HTTPError(.badRequest, code: ErrorCode.redactionInvalid.rawValue, message: error.message)
            }
            throw error
        }
    }

    private static func firstFailingField(_ body: [UInt8]) -> String? {
        do {
            _ = try ContractCoding.decoder.decode(RoomVersionCompleteRequest.self, from: Data(body))
            return nil
        } catch let error as DecodingError {
            let context: DecodingError.Context? = switch error {
            case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c): c
            @unknown default: nil
            }
            return context?.codingPath.first?.stringValue
        } catch {
            return nil
        }
    }
}
