import Contracts
import Foundation

/// The stages of a job, reported on `room.transcode.status.v1` as each starts.
public enum TranscodeStage: String, Sendable, CaseIterable {
    case downloading, validating, parsing, layering, exporting, thumbnail
}

/// Where a finished version's outputs are, under `rooms/{roomId}/{versionId}/`.
public struct TranscodeOutputs: Sendable, Hashable {
    public var manifestKey: String
    public var thumbnailKey: String
    public var thumbnailWebpKey: String
    public var glbKeys: [String]
    public var qualityGrade: String

    public init(manifestKey: String, thumbnailKey: String, thumbnailWebpKey: String, glbKeys: [String], qualityGrade: String) {
        self.manifestKey = manifestKey
        self.thumbnailKey = thumbnailKey
        self.thumbnailWebpKey = thumbnailWebpKey
        self.glbKeys = glbKeys
        self.qualityGrade = qualityGrade
    }
}

/// The package itself is bad: the job fails with `code` and a reason the owner can act on.
/// Any other error a pipeline throws is transient (the store, the database) and retried.
public struct TranscodeFailure: Error, Sendable, CustomStringConvertible {
    public var code: ErrorCode
    public var reason: String

    public init(_ reason: String, code: ErrorCode = .roomTranscodeFailed) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code.rawValue): \(reason)" }
}

/// Turns one request into its outputs in the store, calling `enter` as each stage starts.
public protocol TranscodePipeline: Sendable {
    func transcode(_ request: RoomTranscodeRequest,
                   enter: @escaping @Sendable (TranscodeStage) async throws -> Void) async throws -> TranscodeOutputs
}
