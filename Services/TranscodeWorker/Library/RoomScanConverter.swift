import Contracts
import Dispatch
import Foundation
import RoomScan

/// `RoomTranscoder` as the pipeline's converter. The transcoder is synchronous and
/// CPU-bound, so it runs on a queue of its own, never on the cooperative pool; the stages it
/// reports are stored in order by a task beside it, and the call returns only once every
/// one of them is stored. Input the package is to blame for becomes a `TranscodeFailure`
/// with the transcoder's reason; a failure to write an output is transient.
public struct RoomScanConverter: RoomConverter {
    static let queue = DispatchQueue(label: "transcode-worker.convert", qos: .userInitiated, attributes: .concurrent)

    public init() {}

    public func convert(package: String, roomplan: String, request: RoomTranscodeRequest, outputDirectory: String,
                        enter: @escaping @Sendable (TranscodeStage) async throws -> Void) async throws -> ConvertedRoom {
        let metadata = TranscodeMetadata(roomId: request.roomId, versionId: request.versionId,
                                         durationSeconds: request.scan?.durationSeconds, expectedSHA256: request.source.sha256,
                                         redactions: request.redactions)
        let (stages, continuation) = AsyncStream.makeStream(of: TranscodeStage.self, bufferingPolicy: .unbounded)
        let reporter = Task {
            for await stage in stages { try await enter(stage) }
        }
        let result: Result<TranscodeResult, any Error> = await withCheckedContinuation { done in
            Self.queue.async {
                done.resume(returning: Result {
                    try RoomTranscoder.transcode(
                        packageAt: URL(fileURLWithPath: package), roomPlanJSON: URL(fileURLWithPath: roomplan), metadata: metadata,
                        into: URL(fileURLWithPath: outputDirectory),
                        onStage: { name in if let stage = TranscodeStage(rawValue: name) { continuation.yield(stage) } })
                })
            }
        }
        continuation.finish()
        try await reporter.value
        switch result {
        case .success(let transcoded):
            let prefix = metadata.keyPrefix
            let names = transcoded.files.map { String($0.key.dropFirst(prefix.count)) }
            let manifest = "layer_manifest.json"
            let files = names.filter { $0 != manifest }.map { name in
                ConvertedRoom.File(name: name, contentType: Self.contentType(name))
            }
            return ConvertedRoom(files: files, manifest: manifest, qualityGrade: transcoded.grade.grade.rawValue)
        case .failure(let error as RoomScanError) where !error.isRetriable:
            throw TranscodeFailure(error.reason)
        case .failure(let error):
            throw error
        }
    }

    static func contentType(_ name: String) -> String {
        if name.hasSuffix(".glb") { return "model/gltf-binary" }
        if name.hasSuffix(".png") { return "image/png" }
        if name.hasSuffix(".webp") { return "image/webp" }
        return "application/json"
    }
}
