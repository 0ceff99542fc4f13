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

    func decode(_ record: KafkaConsumerRecord) throws -> RoomTranscodeStatus {
        let status = try ContractCoding.decode(RoomTranscodeStatus.self, from: record.value)
        guard !status.versionId.isEmpty, status.versionId.utf8.count <= 256 else {
            throw InvalidRecord(description: "versionId must be 1–256 bytes")
        }
        return status
    }

    func apply(_ events: [ProjectedEvent<RoomTranscodeStatus>], in connection: PostgresConnection) async throws {
        var latest: [String: String] = [:]
        var grades: [String: String] = [:]
        for event in events {
            latest[event.event.versionId] = event.event.status.rawValue
            if let grade = event.event.qualityGrade, event.event.status == .ready { grades[event.event.versionId] = grade }
        }
        guard !latest.isEmpty else { return }
        let versions = Array(latest.keys)
        _ = try await connection.execute("""
            UPDATE room_versions v SET status = t.status, quality_grade = COALESCE(NULLIF(t.grade, ''), v.quality_grade), updated_at = now()
            FROM unnest($1::text[], $2::text[], $3::text[]) AS t(version_id, status, grade)
            WHERE v.version_id = t.version_id AND v.status NOT IN ('uploading', 'pending')
              AND (v.status <> t.status OR v.quality_grade IS DISTINCT FROM COALESCE(NULLIF(t.grade, ''), v.quality_grade))
            """, [versions, versions.map { latest[$0]! }, versions.map { grades[$0] ?? "" }])
    }
}
