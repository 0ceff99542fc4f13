import Contracts
import Foundation
import Kafka
import Postgres
import Projection
import UserErasure

/// The intake: `room.transcode.requests.v1` → `transcode_jobs`, on the projection runner
/// (offsets in PostgreSQL with the jobs, undecodable records to the DLQ). A request seen
/// before — a redelivery, a replay — changes nothing, whatever the job's state.
public struct TranscodeIntake: Projection {
    public typealias Event = RoomTranscodeRequest
    public typealias Effects = Int

    /// Called after a batch with new jobs committed (wakes the job loop and the relay).
    let onNewJobs: @Sendable () -> Void

    public init(onNewJobs: @escaping @Sendable () -> Void) {
        self.onNewJobs = onNewJobs
    }

    public func decode(_ record: KafkaConsumerRecord) throws -> RoomTranscodeRequest {
        let request = try ContractCoding.decode(RoomTranscodeRequest.self, from: record.value)
        try Self.validate(request)
        return request
    }

    static func validate(_ request: RoomTranscodeRequest) throws {
        for (name, value) in [("roomId", request.roomId), ("versionId", request.versionId), ("ownerUserId", request.ownerUserId)] {
            guard Self.isIdentifier(value) else {
                throw InvalidRecord(description: "\(name) must be 1–128 printable characters")
            }
        }
        for (name, key) in [("source.usdzKey", request.source.usdzKey), ("source.roomplanJsonKey", request.source.roomplanJsonKey)] {
            guard !key.isEmpty, key.utf8.count <= 1_024, !key.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
                throw InvalidRecord(description: "\(name) must be a storage key of 1–1024 printable bytes")
            }
        }
        guard request.source.usdzBytes > 0, request.source.roomplanJsonBytes > 0 else {
            throw InvalidRecord(description: "source sizes must be positive")
        }
    }

    static func isIdentifier(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= 128
            && !value.unicodeScalars.contains { $0.value < 0x21 || $0.value == 0x7f || $0 == ":" }
    }

    public func apply(_ events: [ProjectedEvent<RoomTranscodeRequest>], in connection: PostgresConnection) async throws -> Int {
        // The rooms of an erased account are never transcoded again (a replay, a reset).
        let erased = try await ErasedUsers(service: TranscodeErasure.service)
            .erased(among: Set(events.lazy.map(\.event.ownerUserId)), in: connection)
        let requests = events.filter { !erased.contains($0.event.ownerUserId) }.map { (request: $0.event, trace: $0.trace) }
        guard !requests.isEmpty else { return 0 }
        return try await TranscodeJobStore.insert(requests, in: connection, at: Date())
    }

    public func afterCommit(_ effects: Int) async throws {
        if effects > 0 { onNewJobs() }
    }
}
