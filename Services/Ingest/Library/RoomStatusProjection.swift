import Contracts
import Foundation
import Kafka
import Postgres
import Projection

/// Ingest's view of where each version it queued got to: `room.transcode.status.v1` (the
/// transcode worker owns the status) → `room_versions.status`, on the projection runner. It
/// is what lets a repeated upload-complete answer the version's current status. Statuses of
/// one version arrive in order (keyed by room), so the last one applied is the current one.
struct RoomStatusProjection: Projection {
    typealias Event = RoomTranscodeStatus
    typealias Effects = Void

    struct InvalidStatus: Error, CustomStringConvertible {
        let description: String
    }

    func decode(_ record: KafkaConsumerRecord) throws -> RoomTranscodeStatus {
        let status = try ContractCoding.decode(RoomTranscodeStatus.self, from: record.value)
        guard !status.versionId.isEmpty, status.versionId.utf8.count <= 256 else {
            throw InvalidStatus(description: "versionId must be 1–256 bytes")
        }
        return status
    }

    func apply(_ events: [ProjectedEvent<RoomTranscodeStatus>], in connection: PostgresConnection) async throws {
        var latest: [String: String] = [:]
        for event in events { latest[event.event.versionId] = event.event.status.rawValue }
        guard !latest.isEmpty else { return }
        let versions = Array(latest.keys)
        _ = try await connection.execute("""
            UPDATE room_versions v SET status = t.status, updated_at = now()
            FROM unnest($1::text[], $2::text[]) AS t(version_id, status)
            WHERE v.version_id = t.version_id AND v.status NOT IN ('uploading', 'pending') AND v.status <> t.status
            """, [versions, versions.map { latest[$0]! }])
    }
}
