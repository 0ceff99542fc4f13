import Foundation

/// A room version's status as the catch-up queries tell it: the app's enum (seed `002_*` §6.1) —
/// `uploading` between upload-init and upload-complete (announced on `room.uploads.v1`, before
/// the version has a transcode status), then the worker's statuses.
public enum RoomVersionPhase: String, Sendable, Codable, CaseIterable {
    case uploading, queued, transcoding, ready, failed

    public init(_ status: RoomVersionStatus) {
        switch status {
        case .queued: self = .queued
        case .transcoding: self = .transcoding
        case .ready: self = .ready
        case .failed: self = .failed
        }
    }
}

/// `GET /rooms/versions/{versionId}`: the one catch-up query of a room version (seed `002_*`
/// §6.2, R-iOS-5) — its status, stage, grade, error and attempts, and short-lived presigned
/// GET URLs for its outputs once it is ready.
public struct RoomVersionDetails: Sendable, Hashable, Codable {
    public struct Failure: Sendable, Hashable, Codable {
        public var code: ErrorCode
        public var reason: String
        public init(code: ErrorCode, reason: String) {
            self.code = code
            self.reason = reason
        }
    }

    /// Presigned GET URLs, valid until `expiresAt`.
    public struct Outputs: Sendable, Hashable, Codable {
        public var manifest: String
        public var thumbnailPng: String
        public var thumbnailWebp: String
        /// Layer name → its GLB.
        public var layers: [String: String]
        public var expiresAt: Date
        public init(manifest: String, thumbnailPng: String, thumbnailWebp: String, layers: [String: String], expiresAt: Date) {
            self.manifest = manifest
            self.thumbnailPng = thumbnailPng
            self.thumbnailWebp = thumbnailWebp
            self.layers = layers
            self.expiresAt = expiresAt
        }
    }

    public var versionId: String
    public var roomId: String
    public var status: RoomVersionPhase
    public var stage: String?
    public var qualityGrade: String?
    public var error: Failure?
    public var attempts: Int
    public var outputs: Outputs?
    public var updatedAt: Date

    public init(versionId: String, roomId: String, status: RoomVersionPhase, stage: String?, qualityGrade: String?,
                error: Failure?, attempts: Int, outputs: Outputs?, updatedAt: Date) {
        self.versionId = versionId
        self.roomId = roomId
        self.status = status
        self.stage = stage
        self.qualityGrade = qualityGrade
        self.error = error
        self.attempts = attempts
        self.outputs = outputs
        self.updatedAt = updatedAt
    }
}

/// `POST /rooms/versions/{versionId}/retry` 202 body.
public struct RoomVersionRetryAccepted: Sendable, Hashable, Codable {
    public var versionId: String
    public var status: RoomVersionStatus
    public var attempt: Int
    public init(versionId: String, status: RoomVersionStatus = .queued, attempt: Int) {
        self.versionId = versionId
        self.status = status
        self.attempt = attempt
    }
}

extension ErrorCode {
    /// `transcode-retry` after the third attempt (seed `002_*` §6.4).
    public static let retryLimitReached: ErrorCode = "RETRY_LIMIT_REACHED"
    /// `transcode-retry` of a version that has not failed.
    public static let versionNotFailed: ErrorCode = "VERSION_NOT_FAILED"
}
