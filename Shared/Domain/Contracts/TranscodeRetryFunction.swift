/// `POST /functions/v1/transcode-retry` body: the app's retry button (seed `002_*` §6.4), as a
/// Supabase Edge Function with the seed's snake_case field. The same retry as
/// `POST /rooms/versions/{versionId}/retry`; its 202 body is that route's
/// `RoomVersionRetryAccepted` with snake_case keys (`ContractCoding.snakeCaseEncoder`):
/// `{"version_id","status","attempt"}`.
public struct TranscodeRetryFunctionRequest: Sendable, Hashable, Codable {
    public var versionId: String

    public init(versionId: String) { self.versionId = versionId }

    enum CodingKeys: String, CodingKey {
        case versionId = "version_id"
    }
}
