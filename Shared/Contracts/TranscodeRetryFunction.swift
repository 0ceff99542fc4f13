/// `POST /functions/v1/transcode-retry` body: the app's retry button (seed `002_*` §6.4), as a
/// Supabase Edge Function with the seed's snake_case field. The same retry as
/// `POST /rooms/versions/{versionId}/retry`.
public struct TranscodeRetryFunctionRequest: Sendable, Hashable, Codable {
    public var versionId: String

    public init(versionId: String) { self.versionId = versionId }

    enum CodingKeys: String, CodingKey {
        case versionId = "version_id"
    }
}

/// `POST /functions/v1/transcode-retry` 202 body: the version queued again, and which attempt
/// this is (the app hides its retry button after the third).
public struct TranscodeRetryFunctionResponse: Sendable, Hashable, Codable {
    public var versionId: String
    public var status: RoomVersionStatus
    public var attempt: Int

    public init(versionId: String, status: RoomVersionStatus = .queued, attempt: Int) {
        self.versionId = versionId
        self.status = status
        self.attempt = attempt
    }

    enum CodingKeys: String, CodingKey {
        case versionId = "version_id"
        case status, attempt
    }
}
